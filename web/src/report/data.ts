/** Reading a Run JSON: series by name, phases, headline numbers. */
import type { Phase } from '../charts/timelines';
import type { BenchResults, PhaseStats, RunJson, Series } from './types';

/** Series of a run indexed by name. */
export class SeriesIndex {
  private readonly byName = new Map<string, Series>();

  constructor(series: Series[] | undefined) {
    for (const s of series ?? []) {
      if (s && typeof s.name === 'string' && Array.isArray(s.t_ms) && Array.isArray(s.v)) this.byName.set(s.name, s);
    }
  }

  get(name: string): Series | undefined {
    return this.byName.get(name);
  }

  /** Every name, sorted. */
  names(): string[] {
    return Array.from(this.byName.keys()).sort(natural);
  }

  /** Names matching a pattern, in natural order (cpu.2 before cpu.10). */
  matching(re: RegExp): string[] {
    return this.names().filter((n) => re.test(n));
  }

  get size(): number {
    return this.byName.size;
  }
}

/** Natural order: digits compare as numbers. */
export function natural(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}

/** The run's phases for shading: the store's phases, else the bench results'. */
export function phasesOf(run: RunJson): Phase[] {
  const src = Array.isArray(run.phases) && run.phases.length ? run.phases : run.results?.phases ?? [];
  const out: Phase[] = [];
  for (const p of src) {
    if (typeof p.start_ms !== 'number' || typeof p.end_ms !== 'number') continue;
    out.push({ label: p.label ?? `phase ${p.index ?? out.length}`, startMs: p.start_ms, endMs: p.end_ms, warmup: !!(p as { warmup?: boolean }).warmup });
  }
  return out;
}

/** Errors as one count (the load engine writes a count; older files an object by kind). */
export function errorCount(e: PhaseStats['errors']): number | null {
  if (typeof e === 'number') return e;
  if (e && typeof e === 'object') {
    if (typeof e.total === 'number') return e.total;
    return Object.values(e).reduce((a, b) => a + (typeof b === 'number' ? b : 0), 0);
  }
  return null;
}

/** Duration of the run in ms: metadata first, else the last sample seen. */
export function durationOf(run: RunJson): number {
  const d = run.run?.duration_ms;
  if (typeof d === 'number' && d > 0) return d;
  let end = 0;
  for (const s of run.series ?? []) if (s.t_ms?.length) end = Math.max(end, s.t_ms[s.t_ms.length - 1]);
  return end || 1000;
}

/**
 * Milliseconds to add to a profile time to get run time: the profile's
 * clock starts at its own `start_unix_ns`.
 */
export function profileOffsetMs(run: RunJson): number {
  const ns = run.profile?.start_unix_ns;
  const ms = run.run?.started_unix_ms;
  if (typeof ns === 'number' && typeof ms === 'number') return ns / 1e6 - ms;
  return 0;
}

/** Whether the sweep varied connections or rate. */
export function sweepAxis(results: BenchResults | null | undefined): 'connections' | 'rate' {
  const ps = results?.phases ?? [];
  return ps.some((p) => typeof p.rate === 'number') ? 'rate' : 'connections';
}

/**
 * Errors as contract 1 counts them: transport errors plus HTTP 5xx, with
 * the split beside. Runs recorded before the contract count only transport
 * errors in `errors` (and carry no `status_codes`); their 5xx are added from
 * `status` so an old run and a new one read the same.
 */
export interface ErrorCount {
  total: number;
  transport: number;
  http5xx: number;
  /** Exact 5xx codes when recorded ({"503": n}). */
  codes5xx: [string, number][];
  byKind: [string, number][];
}

/** The errors of a run, a phase or a target (null when the stats carry no error count). */
export function errorsOf(stats: (PhaseStats & { errors_transport?: number }) | null | undefined): ErrorCount | null {
  if (!stats) return null;
  const counted = errorCount(stats.errors);
  if (counted === null) return null;
  const http5xx = typeof stats.status?.['5xx'] === 'number' ? stats.status['5xx'] : 0;
  const contract = typeof stats.errors_transport === 'number' || (!!stats.status_codes && typeof stats.status_codes === 'object');
  const total = contract ? Math.max(counted, http5xx) : counted + http5xx;
  const byKind = Object.entries(stats.errors_by_kind ?? {}).filter((e): e is [string, number] => typeof e[1] === 'number' && e[1] > 0);
  const transport = !contract ? counted : typeof stats.errors_transport === 'number' ? stats.errors_transport : Math.max(0, total - http5xx);
  const codes5xx = Object.entries(stats.status_codes ?? {}).filter((e): e is [string, number] => /^5\d\d$/.test(e[0]) && typeof e[1] === 'number' && e[1] > 0);
  return { total, transport, http5xx, codes5xx, byKind };
}

/** The URLs a run loaded: every `--targets` URL, else the run's target. */
export function targetsOf(run: RunJson): string[] {
  const ts = (run.results as { targets?: { method?: string; url?: string }[] } | null | undefined)?.targets;
  if (Array.isArray(ts) && ts.length) {
    const urls = ts.map((t) => `${t.method && t.method !== 'GET' ? `${t.method} ` : ''}${t.url ?? ''}`).filter((u) => u.trim());
    if (urls.length) return urls;
  }
  return run.run?.target ? [run.run.target] : [];
}
