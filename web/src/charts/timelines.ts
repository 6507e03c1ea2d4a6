/**
 * Timelines on one shared time axis (seconds since the run's start): line
 * charts and heat strips (one row per core) built on uPlot, with a
 * synchronised cursor, exact-value tooltips, phases shaded, and drag to
 * select a range that zooms every chart at once.
 *
 *   const tl = new Timelines(el, { durationMs, phases });
 *   tl.add({ kind: 'lines', key: 'rps', title: 'Throughput', lines: [...] });
 *   tl.on('range', (r) => flame.setRange(r?.fromMs ?? null, r?.toMs ?? null));
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { Emitter } from '../common/events';
import { h } from '../common/dom';
import { isDark, onThemeChange } from '../common/theme';
import { axisColors, seriesColor, utilColor } from './theme';
import { axisLabel, fmtTick, fmtValue } from './units';
import './charts.css';

/** A shaded interval of the run (a sweep step, the warm-up). */
export interface Phase {
  label: string;
  startMs: number;
  endMs: number;
  warmup: boolean;
}

/** One line: times in ms since the run's start and values in `unit`. */
export interface Line {
  label: string;
  unit: string;
  t: ArrayLike<number>;
  v: ArrayLike<number | null>;
  dash?: boolean;
  /** A fixed colour (status classes: 5xx red); default: the palette by position. */
  color?: string;
}

/** A chart of lines; up to two units (left and right axes). */
export interface LineChartSpec {
  kind: 'lines';
  key: string;
  title: string;
  lines: Line[];
  /** Optional note under the title (what the chart answers). */
  note?: string;
  /** Optional sentence above the chart: the answer it supports, in words. */
  lead?: string;
}

/** A heat strip: one row per core (or any index), colour = value / max. */
export interface StripSpec {
  kind: 'strip';
  key: string;
  title: string;
  unit: string;
  /** The value that gets the strongest colour (100 for %). */
  max: number;
  rows: { label: string; t: ArrayLike<number>; v: ArrayLike<number | null> }[];
  note?: string;
  /** Label of the row axis (default "core"). */
  rowAxis?: string;
  /**
   * Draw each row's label inside the strip at its left edge instead of on
   * the axis: for labels longer than the axis is wide (`demo-prefork-3
   * 4250`); every chart keeps the same axis width so time stays aligned.
   */
  inlineLabels?: boolean;
}

export type ChartSpec = LineChartSpec | StripSpec;

/** A selected time range in ms since the run's start. */
export interface TimeRange {
  fromMs: number;
  toMs: number;
}

interface Built {
  spec: ChartSpec;
  u: uPlot;
  box: HTMLElement;
}

let groups = 0;

/**
 * Merges series sampled at possibly different times onto one x array
 * (seconds). Series on different clocks (the client stamps seconds at
 * 5.586, 6.586, ... and the access log at 5, 6, ...) share no x: a series
 * gets `undefined` where it has no sample of its own, which uPlot spans
 * over, so each still draws as a line between its own points. A `null`
 * (uPlot: a gap) is kept only for what the series itself says is missing:
 * its own null values, and any stretch between two of its samples longer
 * than 1.5 of its usual step (a second the recorder did not write).
 */
export function align(series: { t: ArrayLike<number>; v: ArrayLike<number | null> }[]): { x: number[]; ys: (number | null | undefined)[][] } {
  const first = series[0];
  const same =
    !!first &&
    series.every((s) => {
      if (s.t.length !== first.t.length) return false;
      for (let i = 0; i < s.t.length; i++) if (s.t[i] !== first.t[i]) return false;
      return true;
    });
  if (same) {
    const x = Array.from(first.t, (t) => t / 1000);
    const ys = series.map((s) => Array.from({ length: x.length }, (_, i) => num(s.v[i])));
    return { x, ys };
  }
  const all = new Set<number>();
  for (const s of series) for (let i = 0; i < s.t.length; i++) all.add(s.t[i]);
  const ts = Array.from(all).sort((a, b) => a - b);
  const pos = new Map<number, number>();
  ts.forEach((t, i) => pos.set(t, i));
  const ys = series.map((s) => {
    const out: (number | null | undefined)[] = new Array(ts.length).fill(undefined);
    const step = usualStep(s.t);
    for (let i = 0; i < s.t.length; i++) {
      const at = pos.get(s.t[i]) as number;
      out[at] = num(s.v[i]);
      // A hole in the series' own sampling stays a hole: mark the merged
      // points inside it as gaps.
      if (i > 0 && step > 0 && s.t[i] - s.t[i - 1] > 1.5 * step) {
        for (let j = (pos.get(s.t[i - 1]) as number) + 1; j < at; j++) out[j] = null;
      }
    }
    // An own null is a gap from the sample before it to the one after: the
    // merged points around it (undefined, which uPlot would span) are gaps too.
    for (let i = 0; i < out.length; i++) {
      if (out[i] !== null) continue;
      for (let j = i - 1; j >= 0 && out[j] === undefined; j--) out[j] = null;
      for (let j = i + 1; j < out.length && out[j] === undefined; j++) out[j] = null;
    }
    return out;
  });
  return { x: ts.map((t) => t / 1000), ys };
}

/** The median distance between consecutive times (0 for fewer than two). */
function usualStep(t: ArrayLike<number>): number {
  if (t.length < 2) return 0;
  const d: number[] = [];
  for (let i = 1; i < t.length; i++) d.push(t[i] - t[i - 1]);
  d.sort((a, b) => a - b);
  return d[Math.floor(d.length / 2)];
}

/**
 * The value of series `si` (1-based, as uPlot counts) nearest the cursor:
 * on merged clocks the cursor's own index may fall between two of this
 * series' samples, so uPlot's per-series index (`cursor.idxs`) is used,
 * which skips the points the series does not have.
 */
export function valueAtCursor(u: uPlot, si: number): { t: number; v: number | null } | null {
  const idx = u.cursor.idxs?.[si] ?? u.cursor.idx;
  if (idx === null || idx === undefined) return null;
  const v = u.data[si][idx];
  return { t: u.data[0][idx], v: typeof v === 'number' ? v : null };
}

function num(v: number | null | undefined): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/** A group of time-aligned charts. */
export class Timelines extends Emitter<{ range: TimeRange | null; view: TimeRange | null }> {
  readonly root: HTMLElement;
  private readonly built: Built[] = [];
  private readonly syncKey = `ks-timeline-${++groups}`;
  private range: TimeRange | null = null;
  private readonly endS: number;
  private hovered: uPlot | null = null;

  constructor(
    container: HTMLElement,
    private readonly opts: { durationMs: number; phases: Phase[] },
  ) {
    super();
    this.endS = Math.max(1, opts.durationMs / 1000);
    this.root = h('div', { class: 'ks-timelines' });
    container.append(this.root);
    new ResizeObserver(() => this.resize()).observe(this.root);
    onThemeChange(() => this.rebuildAll());
  }

  /** The charts built so far (tests read their scales). */
  get charts(): uPlot[] {
    return this.built.map((b) => b.u);
  }

  /** The specs of the charts built so far, in order (tests read strip rows). */
  get specs(): ChartSpec[] {
    return this.built.map((b) => b.spec);
  }

  /** The selected range, or null for the whole run. */
  get selected(): TimeRange | null {
    return this.range;
  }

  /** Adds a chart below the others. Lines with a third unit go to a chart of their own. */
  add(spec: ChartSpec): void {
    if (spec.kind === 'lines') {
      const units: string[] = [];
      for (const l of spec.lines) if (!units.includes(l.unit)) units.push(l.unit);
      if (units.length > 2) {
        const keep = units.slice(0, 2);
        this.add({ ...spec, lines: spec.lines.filter((l) => keep.includes(l.unit)) });
        this.add({ ...spec, key: `${spec.key}+`, title: `${spec.title} (cont.)`, note: undefined, lead: undefined, lines: spec.lines.filter((l) => !keep.includes(l.unit)) });
        return;
      }
    }
    const box = h('figure', { class: 'ks-chart', 'data-key': spec.key });
    const title = h('figcaption', {}, h('span', { class: 'ks-chart-title', text: spec.title }));
    if (spec.note) title.append(h('span', { class: 'ks-muted ks-chart-note', text: ` · ${spec.note}` }));
    box.append(title);
    if (spec.kind === 'lines' && spec.lead) box.append(h('p', { class: 'ks-chart-lead', text: spec.lead }));
    this.root.append(box);
    const u = this.build(spec, box);
    this.built.push({ spec, u, box });
  }

  /**
   * Zooms every chart to a range (null: the whole run) without emitting
   * `range` (the user's selection); emits `view` (what is shown, whoever
   * chose it), which views that follow the charts listen to.
   */
  setRange(range: TimeRange | null): void {
    this.range = range ? { fromMs: Math.max(0, range.fromMs), toMs: range.toMs } : null;
    const [min, max] = this.xWindow();
    for (const b of this.built) b.u.setScale('x', { min, max });
    this.emit('view', this.range);
  }

  private xWindow(): [number, number] {
    return this.range ? [this.range.fromMs / 1000, this.range.toMs / 1000] : [0, this.endS];
  }

  private select(range: TimeRange | null): void {
    this.setRange(range);
    this.emit('range', this.range);
  }

  private width(): number {
    return Math.max(320, this.root.clientWidth - 4);
  }

  private resize(): void {
    const w = this.width();
    for (const b of this.built) if (Math.abs(b.u.width - w) > 1) b.u.setSize({ width: w, height: b.u.height });
  }

  private rebuildAll(): void {
    for (const b of this.built) {
      b.u.destroy();
      b.u = this.build(b.spec, b.box);
    }
  }

  private build(spec: ChartSpec, box: HTMLElement): uPlot {
    const colors = axisColors();
    const tip = h('div', { class: 'ks-chart-tip', role: 'tooltip' });
    const xAxis: uPlot.Axis = {
      stroke: colors.stroke,
      grid: { stroke: colors.grid, width: 1 },
      ticks: { stroke: colors.grid, width: 1 },
      label: 'time since start (s)',
      labelSize: 18,
      size: 34,
      values: (_u, splits) => splits.map((s) => `${+s.toFixed(3)}s`),
    };
    const yAxis = (unit: string, side: 1 | 3): uPlot.Axis => ({
      scale: unit,
      side,
      stroke: colors.stroke,
      grid: { show: side === 3, stroke: colors.grid, width: 1 },
      ticks: { stroke: colors.grid, width: 1 },
      label: axisLabel(unit),
      labelSize: 16,
      size: 62,
      values: (_u, splits) => splits.map((s) => fmtTick(s, unit)),
    });
    let data: uPlot.AlignedData;
    let series: uPlot.Series[];
    let axes: uPlot.Axis[];
    let scales: uPlot.Scales = { x: { time: false, auto: false, range: () => this.xWindow() } };
    let height: number;
    const hooks: uPlot.Hooks.Arrays = {
      drawClear: [(u) => this.shadePhases(u)],
      setSelect: [(u) => this.onSelect(u)],
      setCursor: [(u) => this.tooltip(u, spec, tip)],
    };
    if (spec.kind === 'lines') {
      const { x, ys } = align(spec.lines);
      data = [x, ...ys] as uPlot.AlignedData;
      const units: string[] = [];
      for (const l of spec.lines) if (!units.includes(l.unit)) units.push(l.unit);
      series = [
        { label: 'time', value: (_u, v) => (v == null ? '—' : `${v.toFixed(1)} s`) },
        ...spec.lines.map((l, i) => ({
          label: l.label,
          scale: l.unit,
          stroke: l.color ?? seriesColor(i),
          width: 1.5,
          dash: l.dash ? [5, 4] : undefined,
          spanGaps: false,
          points: { show: false },
          value: (_u: uPlot, v: number | null) => fmtValue(v, l.unit, true),
        })),
      ];
      for (const unit of units) scales[unit] = { auto: true, range: (_u, min, max) => [Math.min(0, min), max > 0 ? max * 1.08 : 1] };
      axes = [xAxis, yAxis(units[0] ?? '', 3)];
      if (units[1] !== undefined) axes.push(yAxis(units[1], 1));
      height = 190;
    } else {
      const { x, ys } = align(spec.rows);
      const n = spec.rows.length;
      // One invisible series gives uPlot a cursor index; the cells are painted in a draw hook.
      data = [x, x.map(() => null)] as uPlot.AlignedData;
      series = [{ label: 'time' }, { label: spec.title, scale: 'row', show: true, stroke: 'transparent', points: { show: false } }];
      scales = { ...scales, row: { auto: false, range: () => [0, n] } };
      const every = Math.max(1, Math.ceil(n / 16));
      axes = [
        xAxis,
        {
          scale: 'row',
          stroke: colors.stroke,
          grid: { show: false },
          ticks: { show: false },
          label: spec.rowAxis ?? 'core',
          labelSize: 16,
          size: 62,
          splits: () => Array.from({ length: Math.ceil(n / every) }, (_, i) => i * every + 0.5),
          values: (_u, splits) => splits.map((s) => (spec.inlineLabels ? '' : spec.rows[Math.floor(s)]?.label ?? '')),
        },
      ];
      hooks.draw = [(u) => this.paintStrip(u, spec, x, ys)];
      height = Math.max(90, Math.min(300, n * 14)) + 52;
    }
    // Every chart reserves the right axis' width, used or not, so one
    // second sits at the same x in every chart of the group.
    const rightAxis = spec.kind === 'lines' && axes.length > 2;
    const opts: uPlot.Options = {
      width: this.width(),
      height,
      padding: [null, rightAxis ? null : 62 + 16, null, null],
      scales,
      series,
      axes,
      legend: { show: spec.kind === 'lines', live: true },
      cursor: {
        sync: { key: this.syncKey, setSeries: false },
        drag: { x: true, y: false, setScale: false },
        points: { show: false },
      },
      hooks,
    };
    const u = new uPlot(opts, data, box);
    u.over.append(tip);
    u.over.addEventListener('mouseenter', () => (this.hovered = u));
    u.over.addEventListener('mouseleave', () => {
      if (this.hovered === u) this.hovered = null;
      tip.style.display = 'none';
    });
    u.over.addEventListener('dblclick', () => this.select(null));
    return u;
  }

  private onSelect(u: uPlot): void {
    const { left, width } = u.select;
    if (width < 3) return;
    const from = u.posToVal(left, 'x');
    const to = u.posToVal(left + width, 'x');
    u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
    if (to - from <= 0) return;
    this.select({ fromMs: Math.max(0, from * 1000), toMs: to * 1000 });
  }

  private shadePhases(u: uPlot): void {
    const phases = this.opts.phases;
    if (!phases.length) return;
    const { ctx } = u;
    const { left, top, width, height } = u.bbox;
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    const pr = devicePixelRatio || 1;
    ctx.font = `${10 * pr}px system-ui, sans-serif`;
    ctx.textBaseline = 'top';
    phases.forEach((p, i) => {
      const x0 = u.valToPos(p.startMs / 1000, 'x', true);
      const x1 = u.valToPos(p.endMs / 1000, 'x', true);
      if (x1 < left || x0 > left + width) return;
      ctx.fillStyle = p.warmup ? 'rgba(128,128,128,0.22)' : i % 2 ? 'rgba(128,128,128,0.10)' : 'rgba(128,128,128,0.03)';
      ctx.fillRect(x0, top, x1 - x0, height);
      // A label is drawn only where it fits inside its phase (shortened
      // first), so neighbouring phase names never overlap.
      ctx.fillStyle = axisColors().stroke;
      const room = Math.min(x1, left + width) - Math.max(x0, left) - 6 * pr;
      const label = [p.warmup ? `${p.label} (warm-up)` : p.label, p.label].find((t) => ctx.measureText(t).width <= room);
      if (label) ctx.fillText(label, Math.max(x0, left) + 3 * pr, top + 2 * pr);
    });
    ctx.restore();
  }

  private paintStrip(u: uPlot, spec: StripSpec, x: number[], ys: (number | null | undefined)[][]): void {
    const { ctx } = u;
    const { left, top, width, height } = u.bbox;
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    const step = x.length > 1 ? x[1] - x[0] : 1;
    ys.forEach((row, r) => {
      const y0 = u.valToPos(r + 1, 'row', true);
      const y1 = u.valToPos(r, 'row', true);
      for (let i = 0; i < x.length; i++) {
        const v = row[i];
        if (v === null || v === undefined) continue;
        const xa = u.valToPos(x[i], 'x', true);
        const xb = u.valToPos(i + 1 < x.length ? x[i + 1] : x[i] + step, 'x', true);
        if (xb < left || xa > left + width) continue;
        ctx.fillStyle = utilColor(v / spec.max);
        ctx.fillRect(xa, y0, Math.max(1, xb - xa + 0.5), y1 - y0 - (y1 - y0 > 6 ? 1 : 0));
      }
    });
    const pr = devicePixelRatio || 1;
    const rowPx = spec.rows.length ? height / spec.rows.length : 0;
    if (spec.inlineLabels && rowPx >= 9 * pr) {
      const px = Math.min(11, Math.floor(rowPx / pr) - 2) * pr;
      ctx.font = `${px}px system-ui, sans-serif`;
      ctx.textBaseline = 'middle';
      // uPlot leaves the left axis's right alignment on the context.
      ctx.textAlign = 'left';
      const dark = isDark();
      spec.rows.forEach((row, r) => {
        const y = (u.valToPos(r + 1, 'row', true) + u.valToPos(r, 'row', true)) / 2;
        const w = ctx.measureText(row.label).width;
        // A backing keeps the label readable on any cell colour.
        ctx.fillStyle = dark ? 'rgba(20,20,24,0.72)' : 'rgba(255,255,255,0.75)';
        ctx.fillRect(left + 2 * pr, y - px / 2 - pr, w + 6 * pr, px + 2 * pr);
        ctx.fillStyle = axisColors().text;
        ctx.fillText(row.label, left + 5 * pr, y);
      });
    }
    ctx.restore();
  }

  private tooltip(u: uPlot, spec: ChartSpec, tip: HTMLElement): void {
    const idx = u.cursor.idx;
    const left = u.cursor.left ?? -1;
    if (this.hovered !== u || idx === null || idx === undefined || left < 0) {
      tip.style.display = 'none';
      return;
    }
    const t = u.data[0][idx];
    const rows: [string, string, string][] = [];
    if (spec.kind === 'lines') {
      spec.lines.forEach((l, i) => {
        const at = valueAtCursor(u, i + 1);
        // A series on another clock shows its own nearest sample, and when it is.
        const when = at && Math.abs(at.t - t) > 1e-6 ? ` @ ${+at.t.toFixed(3)} s` : '';
        rows.push([l.color ?? seriesColor(i), l.label, `${fmtValue(at?.v ?? null, l.unit, true)}${when}`]);
      });
    } else {
      const top = u.cursor.top ?? 0;
      const r = Math.floor(u.posToVal(top, 'row'));
      const at = (row: { t: ArrayLike<number>; v: ArrayLike<number | null> }): number | null => {
        // Rows share the sampler's clock; find the sample at this time.
        for (let i = 0; i < row.t.length; i++) if (row.t[i] / 1000 === t) return num(row.v[i]);
        return null;
      };
      const row = spec.rows[r];
      if (row) rows.push([utilColor(1), row.label, fmtValue(at(row), spec.unit, true)]);
      const vals = spec.rows.map(at).filter((v): v is number => v !== null);
      if (vals.length) {
        rows.push(['transparent', 'mean of all', fmtValue(vals.reduce((a, b) => a + b, 0) / vals.length, spec.unit, true)]);
        rows.push(['transparent', 'max', fmtValue(Math.max(...vals), spec.unit, true)]);
      }
    }
    tip.replaceChildren(
      h('div', { class: 'ks-tip-time', text: `t = ${fmtValue(t * 1000, 'ms', true)}` }),
      ...rows.map(([c, label, value]) => {
        const sw = h('span', { class: 'ks-tip-swatch' });
        sw.style.background = c;
        return h('div', { class: 'ks-tip-row' }, sw, h('span', { text: label }), h('b', { text: value }));
      }),
    );
    tip.style.display = 'block';
    const ow = u.over.clientWidth;
    const tw = tip.offsetWidth;
    tip.style.left = `${left + 14 + tw > ow ? Math.max(0, left - tw - 14) : left + 14}px`;
    tip.style.top = `${Math.max(0, (u.cursor.top ?? 0) - 10)}px`;
  }
}
