/**
 * Server threads ("workers", field notes §2): the per-thread series
 * `thread.<comm>:<pid>:<tid>.<metric>` (docs/run-json.md) as heat strips
 * (one row per thread) and a table over the measured phases, so uneven
 * work, migrating workers and starved ones show by name.
 */
import { h } from '../common/dom';
import type { Phase, StripSpec, TimeRange } from '../charts/timelines';
import { fmtValue } from '../charts/units';
import { natural, type SeriesIndex } from './data';
import type { Series } from './types';

/** Rows drawn in each thread strip: more would make the page slow to paint and hard to read. */
export const THREAD_ROWS = 16;

const NAME = /^thread\.([A-Za-z0-9_-]*):(\d+):(\d+)\.([a-z_]+)$/;

/** One thread with series. */
export interface ThreadInfo {
  /** `thread.<comm>:<pid>:<tid>.` */
  prefix: string;
  comm: string;
  pid: number;
  tid: number;
  /** Sum of its CPU % points: orders threads busiest first. */
  cpuSum: number;
  /** `comm tid`, as rows are labelled. */
  label: string;
}

/** Threads with series, busiest first (most CPU over the run, then tid). */
export function threadsOf(idx: SeriesIndex): ThreadInfo[] {
  const by = new Map<string, ThreadInfo>();
  for (const n of idx.matching(/^thread\./)) {
    const m = NAME.exec(n);
    if (!m) continue;
    const prefix = `thread.${m[1]}:${m[2]}:${m[3]}.`;
    let t = by.get(prefix);
    if (!t) {
      t = { prefix, comm: m[1], pid: Number(m[2]), tid: Number(m[3]), cpuSum: 0, label: `${m[1] || '?'} ${m[3]}` };
      by.set(prefix, t);
    }
    if (m[4] === 'cpu') t.cpuSum = sum((idx.get(n) as Series).v);
  }
  return Array.from(by.values()).sort((a, b) => b.cpuSum - a.cpuSum || a.tid - b.tid);
}

function sum(v: ArrayLike<number | null>): number {
  let s = 0;
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    if (typeof x === 'number' && Number.isFinite(x)) s += x;
  }
  return s;
}

/**
 * The thread strips: CPU % and migrations/s, one row per thread, the
 * busiest at the top, at most THREAD_ROWS (the note says how many are
 * hidden). Empty when the run has no thread series.
 */
export function threadStrips(idx: SeriesIndex, threads: ThreadInfo[]): StripSpec[] {
  if (!threads.length) return [];
  const shown = threads.slice(0, THREAD_ROWS);
  const hidden = threads.length - shown.length;
  const more = hidden > 0 ? `; ${hidden} quieter thread${hidden === 1 ? '' : 's'} not shown (in the table below)` : '';
  // Strip rows are painted bottom-up: reverse so the busiest is on top.
  const rows = (metric: string) =>
    shown
      .map((t) => {
        const s = idx.get(t.prefix + metric);
        return { label: t.label, t: s?.t_ms ?? [], v: s?.v ?? [] };
      })
      .reverse();
  const specs: StripSpec[] = [{ kind: 'strip', key: 'threads-cpu', title: 'Server threads: CPU (% of one core)', unit: '%', max: 100, rows: rows('cpu'), rowAxis: 'thread', inlineLabels: true, note: `one row per thread (comm tid), busiest on top${more}` }];
  if (shown.some((t) => idx.get(`${t.prefix}migrations`))) {
    // Scale the colour to the 98th percentile of the shown rates, not the
    // maximum: a burst at start-up (threads spreading out) would otherwise
    // wash out the steady state, and a few migrations a second still show.
    const all: number[] = [];
    for (const t of shown) for (const x of idx.get(`${t.prefix}migrations`)?.v ?? []) if (typeof x === 'number' && Number.isFinite(x)) all.push(x);
    all.sort((a, b) => a - b);
    const top = Math.max(1, all.length ? all[Math.min(all.length - 1, Math.floor(all.length * 0.98))] : 0);
    specs.push({ kind: 'strip', key: 'threads-migrations', title: 'Server threads: CPU migrations (/s)', unit: '/s', max: top, rows: rows('migrations'), rowAxis: 'thread', inlineLabels: true, note: `same rows; darkest = ${fmtValue(top, '/s')} or more${more}` });
  }
  return specs;
}

/** One row of the threads table. */
export interface ThreadRow {
  thread: ThreadInfo;
  cpuS: number | null;
  cpuPct: number | null;
  migrations: number | null;
  nvcsw: number | null;
  nivcsw: number | null;
  runq: number | null;
  cores: number[];
}

/** Measured windows: phases that are not warm-up, else the whole run. */
export function measuredWindows(phases: Phase[], durationMs: number): [number, number][] {
  const w = phases.filter((p) => !p.warmup).map((p): [number, number] => [p.startMs, p.endMs]);
  return w.length ? w : [[0, durationMs]];
}

function inWindows(t: number, w: [number, number][]): boolean {
  for (const [a, b] of w) if (t > a && t <= b) return true;
  return false;
}

/**
 * Per thread over time windows `w` (ms, (a, b]): rates are the sum of its
 * points divided by the number of sampler ticks in the windows (from
 * `reference`, the process-wide series of the same metric), so the ticks
 * before a thread had series (it was idle) count as zero.
 */
export function threadTable(idx: SeriesIndex, threads: ThreadInfo[], w: [number, number][]): ThreadRow[] {
  const seconds = w.reduce((a, [x, y]) => a + (y - x) / 1000, 0);
  const ticks = (name: string): number => {
    const s = idx.get(name);
    if (!s) return 0;
    let n = 0;
    for (const t of s.t_ms) if (inWindows(t, w)) n++;
    return n;
  };
  const refTicks = new Map<string, number>();
  const mean = (t: ThreadInfo, metric: string, reference: string): number | null => {
    const s = idx.get(t.prefix + metric);
    if (!s) return null;
    let total = 0;
    let n = 0;
    for (let i = 0; i < s.t_ms.length; i++) {
      const x = s.v[i];
      if (typeof x === 'number' && Number.isFinite(x) && inWindows(s.t_ms[i], w)) {
        total += x;
        n++;
      }
    }
    if (!refTicks.has(reference)) refTicks.set(reference, ticks(reference));
    const d = Math.max(n, refTicks.get(reference) ?? 0);
    return d > 0 ? total / d : null;
  };
  return threads.map((t) => {
    const cpuPct = mean(t, 'cpu', 'proc.cpu_user');
    const cores = new Set<number>();
    const c = idx.get(`${t.prefix}core`);
    if (c) for (let i = 0; i < c.t_ms.length; i++) if (typeof c.v[i] === 'number' && inWindows(c.t_ms[i], w)) cores.add(c.v[i] as number);
    return {
      thread: t,
      cpuPct,
      cpuS: cpuPct === null ? null : (cpuPct / 100) * seconds,
      migrations: mean(t, 'migrations', 'proc.migrations'),
      nvcsw: mean(t, 'nvcsw', 'proc.nvcsw'),
      nivcsw: mean(t, 'nivcsw', 'proc.nivcsw'),
      runq: mean(t, 'runq_delay_ms', 'proc.runq_delay_ms'),
      cores: Array.from(cores).sort((a, b) => a - b),
    };
  });
}

/** A column of the threads table: label, tooltip, sort key, cell text. */
interface Column {
  label: string;
  title: string;
  key: (r: ThreadRow) => number | string;
  text: (r: ThreadRow) => string;
}

const COLUMNS: Column[] = [
  { label: 'thread', title: 'thread name (comm)', key: (r) => r.thread.comm, text: (r) => r.thread.comm || '?' },
  { label: 'pid', title: 'process id', key: (r) => r.thread.pid, text: (r) => String(r.thread.pid) },
  { label: 'tid', title: 'thread id', key: (r) => r.thread.tid, text: (r) => String(r.thread.tid) },
  { label: 'CPU s', title: 'CPU seconds in the range', key: (r) => r.cpuS ?? -1, text: (r) => (r.cpuS === null ? '—' : r.cpuS.toFixed(2)) },
  { label: 'CPU %', title: 'mean CPU, % of one core', key: (r) => r.cpuPct ?? -1, text: (r) => fmtValue(r.cpuPct, '%') },
  { label: 'migrations/s', title: 'moves between cores per second', key: (r) => r.migrations ?? -1, text: (r) => fmtValue(r.migrations, '') },
  { label: 'voluntary/s', title: 'voluntary context switches per second (waiting for I/O, locks)', key: (r) => r.nvcsw ?? -1, text: (r) => fmtValue(r.nvcsw, '') },
  { label: 'involuntary/s', title: 'involuntary context switches per second (preempted)', key: (r) => r.nivcsw ?? -1, text: (r) => fmtValue(r.nivcsw, '') },
  { label: 'run queue ms/s', title: 'ms per second runnable but waiting for a core', key: (r) => r.runq ?? -1, text: (r) => fmtValue(r.runq, '') },
  { label: 'cores seen', title: 'the core it last ran on, at each sample', key: (r) => r.cores.length, text: (r) => (r.cores.length ? r.cores.join(' ') : '—') },
];

/**
 * The threads table over the measured phases, or over the range selected
 * on the timelines (`setRange`); sorted by CPU seconds, or by the column
 * whose header was clicked (again: reversed).
 */
export class ThreadTableView {
  readonly root: HTMLElement;
  private readonly title = h('h3');
  private readonly head = h('tr');
  private readonly body = h('tbody');
  private rows: ThreadRow[] = [];
  private sortCol = 3;
  private desc = true;

  private constructor(
    private readonly idx: SeriesIndex,
    private readonly threads: ThreadInfo[],
    private readonly measured: [number, number][],
  ) {
    const table = h('table', { class: 'ks-table ks-threads' }, h('thead', {}, this.head), this.body);
    this.root = h(
      'div',
      { class: 'ks-threads-wrap', id: 'threads' },
      this.title,
      h('p', { class: 'ks-muted', text: `${threads.length} thread${threads.length === 1 ? '' : 's'} with their own series (a thread gets them once it uses 1% of a core or migrates 10 times a second; at most 32 at a time). Rates are per second of the range.` }),
      h('div', { class: 'ks-routes-wrap' }, table),
    );
    this.setRange(null);
  }

  /** The table, or null when the run has no thread series. */
  static create(idx: SeriesIndex, threads: ThreadInfo[], phases: Phase[], durationMs: number): ThreadTableView | null {
    return threads.length ? new ThreadTableView(idx, threads, measuredWindows(phases, durationMs)) : null;
  }

  /** Recomputes the table for a selected range (null: the measured phases). */
  setRange(range: TimeRange | null): void {
    const w: [number, number][] = range ? [[range.fromMs, range.toMs]] : this.measured;
    this.title.textContent = range ? `Server threads from ${fmtValue(range.fromMs, 'ms')} to ${fmtValue(range.toMs, 'ms')} (selected)` : 'Server threads over the measured phases';
    this.rows = threadTable(this.idx, this.threads, w);
    this.render();
  }

  /** Sorts by column `i` (its index in the header); the same column again reverses. */
  sortBy(i: number): void {
    if (i === this.sortCol) this.desc = !this.desc;
    else {
      this.sortCol = i;
      this.desc = i !== 0;
    }
    this.render();
  }

  private render(): void {
    const col = COLUMNS[this.sortCol];
    const dir = this.desc ? -1 : 1;
    const cmp = (a: number | string, b: number | string): number => (typeof a === 'number' && typeof b === 'number' ? a - b : natural(String(a), String(b)));
    const rows = [...this.rows].sort((a, b) => dir * cmp(col.key(a), col.key(b)) || a.thread.tid - b.thread.tid);
    this.head.replaceChildren(
      ...COLUMNS.map((c, i) =>
        h('th', { title: `${c.title}; click to sort`, class: i === 0 ? 'ks-name' : '', 'aria-sort': i === this.sortCol ? (this.desc ? 'descending' : 'ascending') : undefined, onclick: () => this.sortBy(i) }, c.label + (i === this.sortCol ? (this.desc ? ' ▼' : ' ▲') : '')),
      ),
    );
    this.body.replaceChildren(...rows.map((r) => h('tr', { 'data-tid': String(r.thread.tid) }, ...COLUMNS.map((c, i) => h('td', { class: i === 0 ? 'ks-name' : '', text: c.text(r) })))));
  }
}
