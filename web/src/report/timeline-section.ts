/**
 * Section 4: the client's and the server's view on one time axis. Which
 * series go into which chart follows docs/run-json.md's names; charts whose
 * series were not recorded say so instead of drawing empty axes.
 */
import { h } from '../common/dom';
import { Timelines, type ChartSpec, type Line, type Phase } from '../charts/timelines';
import { SeriesIndex } from './data';
import { ThreadTableView, threadsOf, threadStrips, type ThreadInfo } from './threads';
import { fmtValue } from '../charts/units';
import type { RouteSeconds, RunJson, Series } from './types';

function line(s: Series, label?: string, dash = false): Line {
  return { label: label ?? s.name, unit: s.unit ?? '', t: s.t_ms, v: s.v, dash };
}

/** Status classes keep their colour in every run: 2xx green, 5xx red. */
const STATUS_COLORS: Record<string, string> = { '1xx': '#868e96', '2xx': '#2b8a3e', '3xx': '#1f6fb4', '4xx': '#e8590c', '5xx': '#c92a2a', errors_transport: '#7048e8', timeouts: '#862e9c' };

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
  lines('rps', 'Throughput and errors', ['client.rps', 'log.rps', 'client.errors', 'log.errors'], 'client (solid) and access log (dashed); errors = transport + HTTP 5xx');
  // Status codes: answered requests on the left axis, failures (4xx, 5xx,
  // transport errors, timeouts) on their own right axis so a 4% error rate
  // is not a flat line at the bottom of 20k req/s.
  const failure = /(4xx|5xx|errors_transport|timeouts)$/;
  const statusNames = ['client.status_1xx', 'client.status_2xx', 'client.status_3xx', 'client.status_4xx', 'client.status_5xx', 'client.errors_transport', 'client.timeouts', 'log.status_2xx', 'log.status_3xx', 'log.status_4xx', 'log.status_5xx'].filter((n) => {
    // Classes that never occurred are left out of the legend; 2xx, 5xx and
    // transport errors stay (a flat zero of failures is an answer too).
    const ser = idx.get(n);
    if (!ser) return false;
    return /(status_2xx|status_5xx|errors_transport)$/.test(n) || Array.from(ser.v).some((x) => typeof x === 'number' && x !== 0);
  });
  if (statusNames.length) {
    statusNames.forEach((n) => used.add(n));
    specs.push({
      kind: 'lines',
      key: 'status',
      title: 'Status codes per second',
      note: 'answered by class (left), failures: 4xx, 5xx, transport errors, timeouts (right); access log dashed',
      lines: statusNames.map((n) => ({ ...line(idx.get(n) as Series, n, n.startsWith('log.')), unit: failure.test(n) ? 'errors/s' : '/s', color: STATUS_COLORS[n.replace(/^(client|log)\.(status_)?/, '')] })),
    });
  } else missing.push('Status codes per second');
  lines('latency', 'Latency percentiles', [...idx.matching(/^client\.(p[\d.]+|max)_ms$/), ...idx.matching(/^log\.p[\d.]+_ms$/)], 'client (solid), access log (dashed)');
  lines('inflight', 'Requests in flight', ['client.inflight', 'log.inflight', 'client.connections'], 'client: the most in flight within each second; access log (dashed): the mean in service (service time logged per second); open connections');
  lines('churn', 'Connection churn', ['client.connects', 'client.server_closed'], 'connections the client opened, and responses or connections the server closed, per second');
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

/** When a route's p99 left its baseline. */
export interface RouteRise {
  label: string;
  atMs: number;
  baselineMs: number;
  peakMs: number;
}

/**
 * The routes whose p99 rose, earliest first: a route's baseline is the
 * median p99 of its first fifth of seconds (at least 3); it "rose" at the
 * first second after that whose p99 is above twice the baseline (and 1 ms
 * more) in this second and the next one it has, so a single slow second is
 * not a start.
 */
export function routeRises(list: RouteSeconds[]): RouteRise[] {
  const out: RouteRise[] = [];
  for (const rs of list) {
    const t = Array.isArray(rs.t_ms) ? rs.t_ms : [];
    const p = Array.isArray(rs.p99_ms) ? rs.p99_ms : [];
    const n = Math.min(t.length, p.length);
    if (n < 5) continue;
    const base = Math.max(3, Math.floor(n / 5));
    const head = p.slice(0, base).filter((x): x is number => typeof x === 'number').sort((a, b) => a - b);
    if (!head.length) continue;
    const baseline = head[Math.floor(head.length / 2)];
    const limit = Math.max(2 * baseline, baseline + 1);
    let peak = 0;
    let at: number | null = null;
    for (let i = base; i < n; i++) {
      const x = p[i];
      if (typeof x !== 'number') continue;
      const next = i + 1 < n ? p[i + 1] : x;
      if (at === null && x > limit && typeof next === 'number' && next > limit) at = t[i];
      if (at !== null) peak = Math.max(peak, x);
    }
    if (at !== null) out.push({ label: `${rs.method ? `${rs.method} ` : ''}${rs.route ?? '?'}`, atMs: at, baselineMs: baseline, peakMs: peak });
  }
  return out.sort((a, b) => a.atMs - b.atMs || b.peakMs / b.baselineMs - a.peakMs / a.baselineMs);
}

/** The answer to "which route's p99 rose first", as one sentence. */
export function firstRiseText(rises: RouteRise[]): string {
  if (!rises.length) return 'No route\'s p99 left its baseline (twice its median over the route\'s first seconds).';
  const [a, b] = rises;
  const s = (ms: number): string => `${+(ms / 1000).toFixed(1)} s`;
  let text = `First p99 rise: ${a.label} at ${s(a.atMs)} (p99 ${fmtValue(a.baselineMs, 'ms')} → up to ${fmtValue(a.peakMs, 'ms')})`;
  if (b) text += `; then ${b.label} at ${s(b.atMs)}${b.atMs > a.atMs ? `, ${s(b.atMs - a.atMs)} later` : ', in the same second'}`;
  return `${text}.`;
}

/** Per-route p99 lines, busiest routes first (at most `max`), from route_seconds. */
function routeP99Spec(list: RouteSeconds[], source: string, max = 8): ChartSpec | null {
  const busy = list
    .filter((rs) => Array.isArray(rs.t_ms) && Array.isArray(rs.p99_ms) && rs.t_ms.length)
    .map((rs) => ({ rs, n: (rs.count ?? []).reduce((a, b) => a + (typeof b === 'number' ? b : 0), 0) }))
    .sort((a, b) => b.n - a.n)
    .slice(0, max);
  if (!busy.length) return null;
  const rises = routeRises(list);
  return {
    kind: 'lines',
    key: 'route-p99',
    title: 'Latency per route (p99)',
    note: `${source}; the ${busy.length} busiest route${busy.length === 1 ? '' : 's'}`,
    lead: firstRiseText(rises),
    lines: busy.map(({ rs }) => ({ label: `${rs.method ? `${rs.method} ` : ''}${rs.route ?? '?'}`, unit: 'ms', t: rs.t_ms, v: rs.p99_ms as (number | null)[] })),
  };
}

/** Builds the timelines section inside `parent`; returns it with its Timelines group. */
export function timelineSection(parent: HTMLElement, run: RunJson, durationMs: number, phases: Phase[]): { sec: HTMLElement; timelines: Timelines | null } {
  const series: Series[] | undefined = run.series;
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
  // Per-route latency goes right after the client's percentiles: "which
  // route slowed first" is read next to "when did p99 rise".
  const rsClient = Array.isArray(run.route_seconds?.client) ? run.route_seconds.client : [];
  const rsLog = Array.isArray(run.route_seconds?.access_log) ? run.route_seconds.access_log : [];
  const perRoute = rsClient.length ? routeP99Spec(rsClient, 'client') : rsLog.length ? routeP99Spec(rsLog, 'access log') : null;
  const at = specs.findIndex((s) => s.key === 'latency');
  if (perRoute) specs.splice(at >= 0 ? at + 1 : specs.length, 0, perRoute);
  else missing.push('latency per route (needs per-second route data)');
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
