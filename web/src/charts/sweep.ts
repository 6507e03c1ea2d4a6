/**
 * Sweep charts: a metric against connections or offered rate, one point per
 * phase, with the knee (vertical line) and SLO thresholds (horizontal
 * lines) marked. Several curves share the axes (the comparison page draws
 * both runs).
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { h } from '../common/dom';
import { axisColors, seriesColor } from './theme';
import { axisLabel, fmtTick, fmtValue } from './units';
import './charts.css';

/** One curve: y per x (connections or rate). */
export interface SweepCurve {
  label: string;
  x: number[];
  y: (number | null)[];
  dash?: boolean;
  /** Colour index (defaults to the curve's position). */
  color?: number;
}

/** A marked x (the knee) or y (an SLO limit). */
export interface Mark {
  at: number;
  label: string;
}

export interface SweepSpec {
  title: string;
  /** What was varied, with its unit: "connections" or "offered rate (req/s)". */
  xLabel: string;
  /** Ticks at whole numbers only (connections cannot be 2.5). */
  integerX?: boolean;
  unit: string;
  curves: SweepCurve[];
  vmarks?: Mark[];
  hmarks?: Mark[];
  width: number;
}

/**
 * True for a doubling sweep (1, 2, 4 .. 64): positive steps that each about
 * double. A linear axis crams such a sweep's first half into a few percent
 * of the width; a log2 axis spaces its steps evenly.
 */
export function isDoubling(xs: number[]): boolean {
  if (xs.length < 3 || xs.some((x) => !(x > 0))) return false;
  for (let i = 1; i < xs.length; i++) {
    const r = xs[i] / xs[i - 1];
    if (r < 1.6 || r > 2.5) return false;
  }
  return true;
}

/** Draws a sweep chart into `container`; returns the uPlot instance. */
export function sweepChart(container: HTMLElement, spec: SweepSpec): uPlot {
  const xs = Array.from(new Set(spec.curves.flatMap((c) => c.x))).sort((a, b) => a - b);
  const log2 = isDoubling(xs);
  const ys = spec.curves.map((c) => xs.map((x) => {
    const i = c.x.indexOf(x);
    const v = i >= 0 ? c.y[i] : null;
    return typeof v === 'number' && Number.isFinite(v) ? v : null;
  }));
  const colors = axisColors();
  const box = h('figure', { class: 'ks-chart ks-sweep' }, h('figcaption', {}, h('span', { class: 'ks-chart-title', text: spec.title })));
  container.append(box);
  const hmax = Math.max(0, ...(spec.hmarks ?? []).map((m) => m.at));
  const opts: uPlot.Options = {
    width: spec.width,
    height: 240,
    scales: {
      x: log2 ? { time: false, distr: 3, log: 2 } : { time: false },
      y: { auto: true, range: (_u, _min, max) => [0, Math.max(max, hmax) * 1.1 || 1] },
    },
    series: [
      { label: spec.xLabel, value: (_u, v) => (v == null ? '—' : fmtValue(v, '')) },
      ...spec.curves.map((c, i) => ({
        label: c.label,
        stroke: seriesColor(c.color ?? i),
        width: 2,
        dash: c.dash ? [6, 4] : undefined,
        spanGaps: true,
        points: { show: true, size: 6, fill: seriesColor(c.color ?? i) },
        value: (_u: uPlot, v: number | null) => fmtValue(v, spec.unit, true),
      })),
    ],
    axes: [
      {
        stroke: colors.stroke,
        grid: { stroke: colors.grid, width: 1 },
        ticks: { stroke: colors.grid, width: 1 },
        label: spec.xLabel,
        labelSize: 18,
        size: 34,
        incrs: spec.integerX && !log2 ? [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000] : undefined,
        // On a log2 axis, a tick at each step the sweep ran.
        splits: log2 ? () => xs : undefined,
        values: (_u, splits) => splits.map((s) => fmtValue(s, '')),
      },
      {
        stroke: colors.stroke,
        grid: { stroke: colors.grid, width: 1 },
        ticks: { stroke: colors.grid, width: 1 },
        label: axisLabel(spec.unit),
        labelSize: 16,
        size: 62,
        values: (_u, splits) => splits.map((s) => fmtTick(s, spec.unit)),
      },
    ],
    legend: { live: true },
    cursor: { drag: { x: false, y: false } },
    hooks: {
      draw: [
        (u) => {
          const { ctx } = u;
          const { left, top, width, height } = u.bbox;
          const pr = devicePixelRatio || 1;
          ctx.save();
          ctx.font = `${11 * pr}px system-ui, sans-serif`;
          ctx.lineWidth = 1.5 * pr;
          ctx.setLineDash([4 * pr, 4 * pr]);
          // Labels stay inside the plot (never over the axis ticks) and
          // never on top of each other: each is placed where it does not
          // meet one already drawn.
          const placed: { x0: number; x1: number; y0: number; y1: number }[] = [];
          const lineH = 13 * pr;
          const free = (r: { x0: number; x1: number; y0: number; y1: number }): boolean => placed.every((p) => r.x1 <= p.x0 || r.x0 >= p.x1 || r.y1 <= p.y0 || r.y0 >= p.y1);
          const put = (text: string, candidates: [number, number][]): void => {
            const w = ctx.measureText(text).width;
            const fits = candidates.map(([x, y]) => ({ x0: Math.max(left + 2 * pr, Math.min(x, left + width - w - 2 * pr)), y0: Math.max(top, Math.min(y, top + height - lineH)) })).map((c) => ({ ...c, x1: c.x0 + w, y1: c.y0 + lineH }));
            const r = fits.find(free) ?? fits[0];
            placed.push(r);
            ctx.textBaseline = 'top';
            // uPlot leaves an axis' alignment on the context.
            ctx.textAlign = 'left';
            ctx.fillText(text, r.x0, r.y0);
          };
          for (const m of spec.vmarks ?? []) {
            const x = u.valToPos(m.at, 'x', true);
            if (x < left || x > left + width) continue;
            ctx.strokeStyle = '#e8590c';
            ctx.fillStyle = '#e8590c';
            ctx.beginPath();
            ctx.moveTo(x, top);
            ctx.lineTo(x, top + height);
            ctx.stroke();
            const w = ctx.measureText(m.label).width;
            put(m.label, [[x + 4 * pr, top + 4 * pr], [x - w - 4 * pr, top + 4 * pr], [x + 4 * pr, top + 4 * pr + lineH]]);
          }
          const hs = (spec.hmarks ?? []).map((m) => ({ m, y: u.valToPos(m.at, 'y', true) })).filter(({ y }) => y >= top && y <= top + height);
          for (const { y } of hs) {
            ctx.strokeStyle = '#c92a2a';
            ctx.fillStyle = '#c92a2a';
            ctx.beginPath();
            ctx.moveTo(left, y);
            ctx.lineTo(left + width, y);
            ctx.stroke();
          }
          for (const { m, y } of hs) {
            ctx.fillStyle = '#c92a2a';
            const w = ctx.measureText(m.label).width;
            const right = left + width - w - 4 * pr;
            put(m.label, [[right, y - lineH - pr], [right, y + 2 * pr], [left + width / 2 - w / 2, y - lineH - pr], [left + width / 2 - w / 2, y + 2 * pr], [left + 4 * pr, y - lineH - pr], [left + 4 * pr, y + 2 * pr]]);
          }
          ctx.restore();
        },
      ],
    },
  };
  return new uPlot(opts, [xs, ...ys] as uPlot.AlignedData, box);
}
