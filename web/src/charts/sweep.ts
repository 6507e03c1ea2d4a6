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
import { axisLabel, fmtValue, isBytes } from './units';
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

/** Draws a sweep chart into `container`; returns the uPlot instance. */
export function sweepChart(container: HTMLElement, spec: SweepSpec): uPlot {
  const xs = Array.from(new Set(spec.curves.flatMap((c) => c.x))).sort((a, b) => a - b);
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
      x: { time: false },
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
        incrs: spec.integerX ? [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000] : undefined,
        values: (_u, splits) => splits.map((s) => fmtValue(s, '')),
      },
      {
        stroke: colors.stroke,
        grid: { stroke: colors.grid, width: 1 },
        ticks: { stroke: colors.grid, width: 1 },
        label: axisLabel(spec.unit),
        labelSize: 16,
        size: 62,
        values: (_u, splits) => splits.map((s) => fmtValue(s, isBytes(spec.unit) || spec.unit === 'ms' ? spec.unit : '')),
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
          for (const m of spec.vmarks ?? []) {
            const x = u.valToPos(m.at, 'x', true);
            if (x < left || x > left + width) continue;
            ctx.strokeStyle = '#e8590c';
            ctx.fillStyle = '#e8590c';
            ctx.beginPath();
            ctx.moveTo(x, top);
            ctx.lineTo(x, top + height);
            ctx.stroke();
            ctx.textBaseline = 'top';
            ctx.fillText(m.label, x + 4 * pr, top + 4 * pr);
          }
          for (const m of spec.hmarks ?? []) {
            const y = u.valToPos(m.at, 'y', true);
            if (y < top || y > top + height) continue;
            ctx.strokeStyle = '#c92a2a';
            ctx.fillStyle = '#c92a2a';
            ctx.beginPath();
            ctx.moveTo(left, y);
            ctx.lineTo(left + width, y);
            ctx.stroke();
            ctx.textBaseline = 'bottom';
            ctx.textAlign = 'right';
            ctx.fillText(m.label, left + width - 4 * pr, y - 2 * pr);
            ctx.textAlign = 'left';
          }
          ctx.restore();
        },
      ],
    },
  };
  return new uPlot(opts, [xs, ...ys] as uPlot.AlignedData, box);
}
