/**
 * Section 4: the client's and the server's view on one time axis. Which
 * series go into which chart follows docs/run-json.md's names; charts whose
 * series were not recorded say so instead of drawing empty axes.
 */
import { h } from '../common/dom';
import { Timelines, type ChartSpec, type Line, type Phase } from '../charts/timelines';
import { SeriesIndex } from './data';
import { ThreadTableView, threadsOf, threadStrips, type ThreadInfo } from './threads';
import type { Series } from './types';

function line(s: Series, label?: string, dash = false): Line {
  return { label: label ?? s.name, unit: s.unit ?? '', t: s.t_ms, v: s.v, dash };
}

/** Per-core busy % from cpu.<n>.* (everything but idle and iowait). */
export function coreBusy(idx: SeriesIndex): { label: string; t: number[]; v: (number | null)[] }[] {
  const cores = new Set<number>();
  for (const n of idx.matching(/^cpu\.\d+\./)) cores.add(Number(n.split('.')[1]));
  const rows = [];
  for (const c of Array.from(cores).sort((a, b) => a - b)) {
    const idle = idx.get(`cpu.${c}.idle`);
    const io = idx.get(`cpu.${c}.iowait`);
    const parts = ['user', 'nice', 'system', 'irq', 'softirq', 'steal'].map((k) => idx.get(`cpu.${c}.${k}`)).filter((s): s is Series => !!s);
    const base = idle ?? parts[0];
    if (!base) continue;
    const v = base.t_ms.map((_, i) => {
      if (parts.length) {
        let sum = 0;
        let any = false;
        for (const p of parts) {
          const x = p.v[i];
          if (typeof x === 'number') {
            sum += x;
            any = true;
          }
        }
        return any ? sum : null;
      }
      const x = idle?.v[i];
      const w = io?.v[i];
      return typeof x === 'number' ? Math.max(0, 100 - x - (typeof w === 'number' ? w : 0)) : null;
    });
    rows.push({ label: `cpu${c}`, t: base.t_ms, v });
  }
  return rows;
}

/** The chart plan: which series, in which chart, in which order. */
export function chartPlan(idx: SeriesIndex): { specs: ChartSpec[]; missing: string[]; used: Set<string>; threads: ThreadInfo[] } {
  const specs: ChartSpec[] = [];
  const missing: string[] = [];
  const used = new Set<string>();
  const lines = (key: string, title: string, names: string[], note?: string, labels?: (n: string) => string): void => {
    const present = names.filter((n) => idx.get(n));
    if (!present.length) {
      missing.push(title);
      return;
    }
    present.forEach((n) => used.add(n));
    specs.push({ kind: 'lines', key, title, note, lines: present.map((n) => line(idx.get(n) as Series, labels ? labels(n) : n, n.startsWith('log.'))) });
  };
  lines('rps', 'Throughput and errors', ['client.rps', 'log.rps', 'client.errors'], 'client and access log');
  lines('latency', 'Latency percentiles', [...idx.matching(/^client\.p[\d.]+_ms$/), ...idx.matching(/^log\.p[\d.]+_ms$/), 'client.inflight'], 'client (solid), access log (dashed), connections in flight');
  const cores = coreBusy(idx);
  if (cores.length) {
    idx.matching(/^cpu\.\d+\./).forEach((n) => used.add(n));
    specs.push({ kind: 'strip', key: 'cpu', title: 'CPU per core (busy %)', unit: '%', max: 100, rows: cores, note: 'one row per core; darker = busier' });
  } else missing.push('CPU per core');
  lines('cpu-all', 'CPU, all cores', idx.matching(/^cpu\.all\.(user|system|iowait|softirq|irq|steal)$/));
  lines('sched', 'Scheduler', ['sched.ctxt', 'proc.migrations', 'sched.procs_running', 'sched.procs_blocked'], 'context switches, migrations, run queue');
  lines('paging', 'Paging', ['vm.pgpgin', 'vm.pgpgout', 'vm.pgmajfault', 'vm.workingset_refault'], 'page-ins/outs and major faults');
  lines('pagecache', 'Page cache', ['mem.cached', 'mem.active_file', 'mem.inactive_file', 'mem.dirty']);
  lines('disk', 'Disk IOPS', idx.matching(/^disk\.[^.]+\.(r|w)_iops$/));
  lines('net', 'Network', idx.matching(/^net\.[^.]+\.(rx|tx)_bytes$/));
  lines('tcp', 'TCP', ['tcp.active_opens', 'tcp.passive_opens', 'tcp.retrans', 'tcp.estab', 'tcp.time_wait'].filter((n) => idx.get(n)));
  lines('proc-cpu', 'Server process: CPU and memory', ['proc.cpu_user', 'proc.cpu_system', 'proc.rss']);
  lines('proc-sw', 'Server process: context switches', ['proc.nvcsw', 'proc.nivcsw', 'proc.threads'], 'voluntary (waiting) and involuntary (preempted)');
  const pc = idx.matching(/^proc\.core\.\d+$/);
  if (pc.length) {
    pc.forEach((n) => used.add(n));
    const rows = pc.map((n) => {
      const s = idx.get(n) as Series;
      return { label: `cpu${n.split('.')[2]}`, t: s.t_ms, v: s.v };
    });
    specs.push({ kind: 'strip', key: 'proc-core', title: 'Server process CPU per core', unit: '%', max: 100, rows, note: 'where the server ran' });
  }
  // Per-thread series are many (six per thread): the strips and the
  // threads table show them, not the "add a chart" list.
  idx.matching(/^thread\./).forEach((n) => used.add(n));
  const threads = threadsOf(idx);
  specs.push(...threadStrips(idx, threads));
  return { specs, missing, used, threads };
}

/** Builds the timelines section inside `parent`; returns it with its Timelines group. */
export function timelineSection(parent: HTMLElement, series: Series[] | undefined, durationMs: number, phases: Phase[]): { sec: HTMLElement; timelines: Timelines | null } {
  const sec = h('section', { id: 'timelines', class: 'ks-section' }, h('h2', { text: 'Timelines' }));
  // Attached first: charts take their width from the page.
  parent.append(sec);
  const idx = new SeriesIndex(series);
  if (!idx.size) {
    sec.append(h('p', { class: 'ks-muted ks-empty', text: 'No time series in this run.' }));
    return { sec, timelines: null };
  }
  sec.append(h('p', { class: 'ks-muted ks-hint', text: 'Drag across any chart to select a time range (all charts and the flame graph follow); double-click or Esc to reset.' }));
  const timelines = new Timelines(sec, { durationMs, phases });
  const { specs, missing, used, threads } = chartPlan(idx);
  for (const s of specs) timelines.add(s);
  const table = ThreadTableView.create(idx, threads, phases, durationMs);
  if (table) {
    sec.append(table.root);
    timelines.on('view', (r) => table.setRange(r));
  }
  if (missing.length) sec.append(h('p', { class: 'ks-muted', text: `Not recorded: ${missing.join(', ')}.` }));
  const rest = idx.names().filter((n) => !used.has(n));
  if (rest.length) {
    const pick = h('select', { 'aria-label': 'add a chart of another series' }, h('option', { value: '', text: `add a chart (${rest.length} more series)…` }), ...rest.map((n) => h('option', { value: n, text: `${n} (${idx.get(n)?.unit ?? ''})` })));
    pick.addEventListener('change', () => {
      const s = idx.get(pick.value);
      if (!s) return;
      timelines.add({ kind: 'lines', key: `extra-${s.name}`, title: s.name, lines: [line(s)] });
      pick.querySelector(`option[value="${CSS.escape(s.name)}"]`)?.remove();
      pick.value = '';
    });
    sec.append(h('div', { class: 'ks-toolbar' }, pick));
  }
  return { sec, timelines };
}
