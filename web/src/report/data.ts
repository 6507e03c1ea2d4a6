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
