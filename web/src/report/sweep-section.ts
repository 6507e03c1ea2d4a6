/** Section 2: throughput and latency percentiles against connections or rate. */
import { h } from '../common/dom';
import { sweepChart, type Mark, type SweepCurve } from '../charts/sweep';
import { fmtValue } from '../charts/units';
import { sweepAxis } from './data';
import type { BenchResults, SloVerdict } from './types';

/** The varied quantity of each phase, or null when it is unknown. */
export function sweepX(results: BenchResults): (number | null)[] {
  const axis = sweepAxis(results);
  return (results.phases ?? []).map((p) => {
    const v = axis === 'rate' ? p.rate : p.connections;
    return typeof v === 'number' ? v : null;
  });
}

/** SLO limits drawn on the sweep charts: latency clauses on the latency chart, rps on throughput. */
export function sloMarks(slo: SloVerdict | null | undefined): { latency: Mark[]; rps: Mark[] } {
  const latency: Mark[] = [];
  const rps: Mark[] = [];
  for (const c of slo?.clauses ?? []) {
    if (!Number.isFinite(c.limit)) continue;
    if (c.unit === 'ms') latency.push({ at: c.limit, label: `SLO ${c.clause}` });
    else if (c.unit === 'req/s') rps.push({ at: c.limit, label: `SLO ${c.clause}` });
  }
  return { latency, rps };
}

/** Builds the sweep section (or a note when the run had a single phase). */
export function sweepSection(results: BenchResults | null | undefined, width: number): HTMLElement {
  const sec = h('section', { id: 'sweep', class: 'ks-section' }, h('h2', { text: 'Sweep' }));
  const phases = results?.phases ?? [];
  const xs = results ? sweepX(results) : [];
  const pts = phases.map((p, i) => ({ p, x: xs[i] })).filter((q): q is { p: typeof q.p; x: number } => q.x !== null);
  if (!results || pts.length < 2) {
    sec.append(h('p', { class: 'ks-muted ks-empty', text: pts.length === 1 ? 'One phase only: run a sweep (--sweep-connections or --sweep-rate) to see where throughput stops rising.' : 'No sweep in this run.' }));
    return sec;
  }
  const axis = sweepAxis(results);
  const xLabel = axis === 'rate' ? 'offered rate (req/s)' : 'connections';
  const x = pts.map((q) => q.x);
  const marks = sloMarks(results.slo);
  const knee = typeof results.knee === 'number' ? xs[results.knee] : null;
  const vmarks: Mark[] = knee !== null && knee !== undefined ? [{ at: knee, label: `knee (${fmtValue(knee, axis === 'rate' ? 'req/s' : '')})` }] : [];
  const grid = h('div', { class: 'ks-sweeps' });
  sec.append(grid);
  // Two side by side when the page is wide; one per row (the page's width) on a phone.
  const w = width >= 760 ? Math.floor(width / 2) - 12 : Math.max(300, width - 28);
  const rps: SweepCurve[] = [{ label: 'throughput', x, y: pts.map((q) => q.p.rps ?? null) }];
  if (axis === 'rate') rps.push({ label: 'offered', x, y: x, dash: true, color: 7 });
  sweepChart(grid, { title: 'Throughput', xLabel, unit: 'req/s', curves: rps, vmarks, hmarks: marks.rps, width: w, integerX: axis === 'connections' });
  const lat: SweepCurve[] = (['p50', 'p80', 'p99'] as const).map((k, i) => ({ label: k, x, y: pts.map((q) => q.p.latency_ms?.[k] ?? null), color: i + 1 }));
  sweepChart(grid, { title: 'Latency percentiles', xLabel, unit: 'ms', curves: lat, vmarks, hmarks: marks.latency, width: w, integerX: axis === 'connections' });
  return sec;
}
