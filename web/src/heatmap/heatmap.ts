/**
 * Subsecond heat map (FlameScope style): one column per second, `rows`
 * cells per second (top = start of the second), coloured by sample count.
 * Drag over cells to select a time range (emits "select"); shift+drag
 * selects a second range "b" to compare against the first.
 *
 *   const hm = new HeatMap(el, profile, { rows: 50 });
 *   hm.on('select', ({ which, fromMs, toMs }) => flame.setRange(fromMs, toMs));
 */
import { Emitter } from '../common/events';
import { h, clear } from '../common/dom';
import { heatColor } from '../common/colors';
import { fmtCount, fmtMs, fmtSecondsExact } from '../common/format';
import { isDark, onThemeChange, cssVar } from '../common/theme';
import { Profile } from '../flame/profile';
import './heatmap.css';

/** Options of a heat map. */
export interface HeatMapOptions {
  /** Cells per second (FlameScope uses 50). */
  rows?: number;
  /** Count idle samples too (default: excluded). */
  idle?: boolean;
}

/** Which of the two selections. */
export type Which = 'a' | 'b';

/** A selected time range: [fromMs, toMs). */
export interface HeatSelection {
  which: Which;
  fromMs: number;
  toMs: number;
  /** Samples inside the range under the current filters. */
  samples: number;
}

/** Events a heat map emits. */
export interface HeatMapEvents {
  select: HeatSelection;
  /** Both selections cleared. */
  clear: null;
}

/** At most a day of one-second columns. */
const MAX_COLUMNS = 86_400;
const LEFT = 46;
const TOP = 18;

/** The heat map component. */
export class HeatMap extends Emitter<HeatMapEvents> {
  readonly root: HTMLElement;
  readonly rows: number;
  readonly cols: number;
  private readonly profile: Profile;
  private idle: boolean;
  private threads: ReadonlySet<number> | null = null;
  private counts: Float64Array;
  /** Samples lie beyond MAX_COLUMNS seconds and are not counted. */
  private clipped = false;
  private max = 0;
  private cellW = 8;
  private cellH = 6;
  private canvas: HTMLCanvasElement;
  private tip: HTMLElement;
  private info: HTMLElement;
  private sel: { a: [number, number] | null; b: [number, number] | null } = { a: null, b: null };
  private drag: { which: Which; start: number; end: number } | null = null;
  private dark = isDark();

  constructor(container: HTMLElement, profile: Profile, opts: HeatMapOptions = {}) {
    super();
    if (!profile.sampleTime) throw new Error('this profile has no sample times, so it has no heat map (use perf script or .cpuprofile input)');
    this.profile = profile;
    this.rows = Math.max(1, Math.min(1000, Math.floor(opts.rows ?? 50)));
    this.idle = !!opts.idle;
    let maxT = 0;
    for (const t of profile.sampleTime) if (t > maxT) maxT = t;
    // Enough columns for the last sample, and for the stated duration, but
    // at most a day: one stray timestamp must not ask for 10^10 cells
    // (the same limit as `keisoku scope`); later samples are left out and
    // the info line says so.
    const wanted = Math.max(1, Math.floor(maxT / 1000) + 1, Math.ceil((profile.durationMs ?? 0) / 1000));
    this.cols = Number.isFinite(wanted) ? Math.min(wanted, MAX_COLUMNS) : MAX_COLUMNS;
    this.clipped = !(wanted <= MAX_COLUMNS);
    this.counts = new Float64Array(this.cols * this.rows);
    this.canvas = h('canvas', { class: 'ks-heat-canvas', role: 'img', 'aria-label': 'subsecond heat map: columns are seconds, rows fractions of a second' });
    this.tip = h('div', { class: 'ks-heat-tip', role: 'tooltip' });
    this.info = h('div', { class: 'ks-heat-info ks-muted', text: 'drag over cells to select a range · shift+drag a second range to compare' });
    this.root = h('div', { class: 'ks-heat' }, h('div', { class: 'ks-heat-scroll' }, this.canvas), this.tip, this.info);
    container.append(this.root);
    this.canvas.addEventListener('mousedown', (e) => this.onDown(e));
    window.addEventListener('mousemove', (e) => this.onMove(e));
    window.addEventListener('mouseup', () => this.onUp());
    this.canvas.addEventListener('mouseleave', () => (this.tip.style.display = 'none'));
    onThemeChange(() => {
      this.dark = isDark();
      this.draw();
    });
    this.recount();
  }

  /** Counts idle samples too (true) or not. */
  setIdle(on: boolean): void {
    this.idle = on;
    this.recount();
  }

  /** Only samples of these thread indices (null: all). */
  setThreads(threads: ReadonlySet<number> | null): void {
    this.threads = threads;
    this.recount();
  }

  /** Cell index of a time: floor(t * rows / 1000). */
  cellOf(timeMs: number): number {
    return Math.floor((timeMs * this.rows) / 1000);
  }

  /** Start time of a cell index in ms. */
  cellStart(cell: number): number {
    return (cell * 1000) / this.rows;
  }

  /** Samples counted in a cell (column = second, row = slice). */
  count(col: number, row: number): number {
    return this.counts[col * this.rows + row] ?? 0;
  }

  /** Where a cell is drawn, in CSS pixels relative to the canvas. */
  cellRect(col: number, row: number): { x: number; y: number; w: number; h: number } {
    return { x: LEFT + col * this.cellW, y: TOP + row * this.cellH, w: this.cellW, h: this.cellH };
  }

  /** The canvas element (for tests and embedding pages). */
  get element(): HTMLCanvasElement {
    return this.canvas;
  }

  /** Samples with fromMs <= t < toMs under the current idle/thread filters. */
  samplesIn(fromMs: number, toMs: number): number {
    const p = this.profile;
    const st = p.sampleTime as Float64Array;
    const sn = p.sampleNode as Int32Array;
    const th = p.sampleThread;
    const idle = this.idle ? null : p.idleNodes();
    let n = 0;
    for (let i = 0; i < st.length; i++) {
      const t = st[i];
      if (t < fromMs || t >= toMs) continue;
      if (idle && idle[sn[i]]) continue;
      if (this.threads && th && !this.threads.has(th[i])) continue;
      n++;
    }
    return n;
  }

  /** Selects a range programmatically (as a drag would). */
  select(which: Which, fromMs: number, toMs: number): HeatSelection {
    this.sel[which] = [fromMs, toMs];
    this.draw();
    const s: HeatSelection = { which, fromMs, toMs, samples: this.samplesIn(fromMs, toMs) };
    this.renderInfo();
    this.emit('select', s);
    return s;
  }

  /** Clears both selections. */
  clearSelection(): void {
    this.sel = { a: null, b: null };
    this.draw();
    this.renderInfo();
    this.emit('clear', null);
  }

  /** The current selections. */
  selections(): { a: [number, number] | null; b: [number, number] | null } {
    return { a: this.sel.a, b: this.sel.b };
  }

  private recount(): void {
    const p = this.profile;
    const st = p.sampleTime as Float64Array;
    const sn = p.sampleNode as Int32Array;
    const th = p.sampleThread;
    const idle = this.idle ? null : p.idleNodes();
    this.counts.fill(0);
    const limit = this.counts.length;
    for (let i = 0; i < st.length; i++) {
      if (idle && idle[sn[i]]) continue;
      if (this.threads && th && !this.threads.has(th[i])) continue;
      const c = this.cellOf(st[i]);
      if (c >= 0 && c < limit) this.counts[c]++;
    }
    let max = 0;
    for (let i = 0; i < limit; i++) if (this.counts[i] > max) max = this.counts[i];
    this.max = max;
    this.draw();
    this.renderInfo();
  }

  private layout(): void {
    const avail = Math.max(300, (this.root.parentElement?.clientWidth ?? 900) - LEFT - 10);
    this.cellW = Math.max(3, Math.min(48, Math.floor(avail / this.cols)));
    this.cellH = Math.max(2, Math.min(10, Math.floor(400 / this.rows)));
  }

  /** Redraws the canvas. */
  draw(): void {
    this.layout();
    const w = LEFT + this.cols * this.cellW + 4;
    const hgt = TOP + this.rows * this.cellH + 4;
    const dpr = window.devicePixelRatio || 1;
    const cv = this.canvas;
    cv.width = Math.round(w * dpr);
    cv.height = Math.round(hgt * dpr);
    cv.style.width = `${w}px`;
    cv.style.height = `${hgt}px`;
    const ctx = cv.getContext('2d');
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, hgt);
    const { rows, cols, cellW, cellH } = this;
    for (let c = 0; c < cols; c++) {
      for (let r = 0; r < rows; r++) {
        ctx.fillStyle = heatColor(this.counts[c * rows + r], this.max, this.dark);
        ctx.fillRect(LEFT + c * cellW, TOP + r * cellH, cellW - (cellW > 4 ? 1 : 0), cellH - (cellH > 3 ? 1 : 0));
      }
    }
    // Selections: outline every cell of each range.
    const drawSel = (range: [number, number] | null, color: string): void => {
      if (!range) return;
      const a = this.cellOf(range[0]);
      const b = Math.ceil((range[1] * rows) / 1000) - 1;
      ctx.fillStyle = color;
      for (let i = Math.max(0, a); i <= Math.min(b, cols * rows - 1); i++) {
        const c = Math.floor(i / rows);
        const r = i % rows;
        ctx.fillRect(LEFT + c * cellW, TOP + r * cellH, cellW, cellH);
      }
    };
    drawSel(this.drag ? this.dragRange(this.drag) : null, cssVar('--ks-sel', 'rgba(40,110,255,.3)'));
    drawSel(this.sel.a, 'rgba(40,110,255,0.45)');
    drawSel(this.sel.b, 'rgba(0,170,90,0.45)');
    // Axes: seconds on top, offset within the second on the left.
    const fg = cssVar('--ks-muted', '#666');
    ctx.fillStyle = fg;
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'alphabetic';
    const every = Math.max(1, Math.ceil(40 / cellW));
    for (let c = 0; c < cols; c += every) ctx.fillText(`${c}s`, LEFT + c * cellW, TOP - 5);
    ctx.textBaseline = 'middle';
    const labelRows = [0, Math.floor(rows / 2), rows - 1];
    for (const r of labelRows) ctx.fillText(`${Math.round((r * 1000) / rows)}ms`, 2, TOP + r * cellH + cellH / 2);
  }

  private renderInfo(): void {
    clear(this.info);
    const parts: string[] = [];
    const fmt = (w: Which, r: [number, number]): string => `${w === 'a' ? 'A' : 'B'}: ${fmtSecondsExact(r[0])} – ${fmtSecondsExact(r[1])} (${fmtCount(this.samplesIn(r[0], r[1]))} samples)`;
    if (this.sel.a) parts.push(fmt('a', this.sel.a));
    if (this.sel.b) parts.push(fmt('b', this.sel.b));
    const scale = h('span', { class: 'ks-heat-scale', title: 'samples per cell' });
    scale.style.background = `linear-gradient(90deg, ${[0, 0.25, 0.5, 0.75, 1].map((f) => heatColor(f === 0 ? 0 : f * this.max, this.max, this.dark)).join(', ')})`;
    this.info.append(
      '0 ',
      scale,
      ` ${fmtCount(this.max)} samples per cell (${fmtMs(1000 / this.rows)})${this.idle ? '' : ', idle excluded'} · `,
      parts.length ? parts.join(' · ') : 'drag over cells to select a range · shift+drag a second range to compare',
    );
    if (this.clipped) this.info.append(` · samples later than ${fmtCount(MAX_COLUMNS)} s are not shown (a stray timestamp?)`);
  }

  private cellAtEvent(e: MouseEvent, clamp: boolean): number {
    const r = this.canvas.getBoundingClientRect();
    let c = Math.floor((e.clientX - r.left - LEFT) / this.cellW);
    let row = Math.floor((e.clientY - r.top - TOP) / this.cellH);
    if (!clamp && (c < 0 || c >= this.cols || row < 0 || row >= this.rows)) return -1;
    c = Math.max(0, Math.min(this.cols - 1, c));
    row = Math.max(0, Math.min(this.rows - 1, row));
    return c * this.rows + row;
  }

  private dragRange(d: { start: number; end: number }): [number, number] {
    const a = Math.min(d.start, d.end);
    const b = Math.max(d.start, d.end);
    return [this.cellStart(a), this.cellStart(b + 1)];
  }

  private onDown(e: MouseEvent): void {
    const cell = this.cellAtEvent(e, false);
    if (cell < 0 || e.button !== 0) return;
    e.preventDefault();
    this.drag = { which: e.shiftKey && this.sel.a ? 'b' : 'a', start: cell, end: cell };
    if (this.drag.which === 'a') this.sel.b = null;
    this.draw();
  }

  private onMove(e: MouseEvent): void {
    if (this.drag) {
      const cell = this.cellAtEvent(e, true);
      if (cell !== this.drag.end) {
        this.drag.end = cell;
        this.draw();
      }
    }
    if (e.target !== this.canvas) return;
    const cell = this.cellAtEvent(e, false);
    if (cell < 0) {
      this.tip.style.display = 'none';
      return;
    }
    const t0 = this.cellStart(cell);
    this.tip.textContent = `${fmtMs(t0)} – ${fmtMs(this.cellStart(cell + 1))}: ${fmtCount(this.counts[cell])} samples`;
    this.tip.style.display = 'block';
    this.tip.style.left = `${e.clientX + 12}px`;
    this.tip.style.top = `${e.clientY + 12}px`;
  }

  private onUp(): void {
    const d = this.drag;
    if (!d) return;
    this.drag = null;
    const [from, to] = this.dragRange(d);
    this.select(d.which, from, to);
  }
}
