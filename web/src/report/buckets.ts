/**
 * Per-second latency histograms of route_seconds (docs/run-json.md,
 * contract 3): sparse log buckets, bucket k holding latencies in
 * [2^(k/8), 2^((k+1)/8)) microseconds. This mirrors crates/common's
 * `latency_bucket` and `bucket_upper_us` so a range's percentiles read in
 * the browser agree with the ones Rust computes.
 */
import type { RouteSeconds } from './types';

/** Buckets per doubling: 8 gives about 9% relative width. */
const PER_OCTAVE = 8;

/** The bucket of a latency in microseconds: floor(8 * log2(us)); below 1 µs is bucket 0. */
export function latencyBucket(us: number): number {
  if (!(us >= 1)) return 0;
  let k = Math.floor(PER_OCTAVE * Math.log2(us));
  // log2 of an exact power of two can land a hair below the integer.
  while (bucketLowerUs(k + 1) <= us) k++;
  while (k > 0 && bucketLowerUs(k) > us) k--;
  return k;
}

/** Lower edge of bucket k in microseconds. */
export function bucketLowerUs(k: number): number {
  return 2 ** (k / PER_OCTAVE);
}

/** Upper edge of bucket k in microseconds: what a percentile read from buckets reports. */
export function bucketUpperUs(k: number): number {
  return 2 ** ((k + 1) / PER_OCTAVE);
}

/** A merged histogram: bucket -> count. */
export type Hist = Map<number, number>;

/** Adds a sparse [[k, n], ...] histogram into `into`; malformed pairs are skipped. */
export function addHist(into: Hist, sparse: unknown): void {
  if (!Array.isArray(sparse)) return;
  for (const pair of sparse) {
    if (!Array.isArray(pair) || pair.length !== 2) continue;
    const [k, n] = pair;
    if (typeof k !== 'number' || typeof n !== 'number' || !Number.isInteger(k) || k < 0 || !(n > 0)) continue;
    into.set(k, (into.get(k) ?? 0) + n);
  }
}

/** Samples in a histogram. */
export function histCount(hist: Hist): number {
  let n = 0;
  for (const c of hist.values()) n += c;
  return n;
}

/**
 * The q-th percentile (0..100) in milliseconds: the upper edge of the
 * bucket holding the ceil(q% of n)-th smallest latency (nearest rank);
 * null for an empty histogram.
 */
export function histPercentileMs(hist: Hist, q: number): number | null {
  const n = histCount(hist);
  if (!n) return null;
  const rank = Math.max(1, Math.ceil((Math.min(100, Math.max(0, q)) / 100) * n));
  const keys = Array.from(hist.keys()).sort((a, b) => a - b);
  let seen = 0;
  for (const k of keys) {
    seen += hist.get(k) ?? 0;
    if (seen >= rank) return bucketUpperUs(k) / 1000;
  }
  return bucketUpperUs(keys[keys.length - 1]) / 1000;
}

/**
 * Whether the second ending at `tMs` belongs to [fromMs, toMs): its middle
 * lies inside, so a range drawn on whole seconds takes exactly those.
 */
export function secondInRange(tMs: number, fromMs: number, toMs: number): boolean {
  const mid = tMs - 500;
  return mid >= fromMs && mid < toMs;
}

/** One route's numbers over a time range, from its per-second data. */
export interface RouteRange {
  method: string;
  route: string;
  count: number;
  errors: number;
  hist: Hist;
  maxMs: number | null;
}

/** Sums a route's seconds inside a range (null range: every second). */
export function routeInRange(rs: RouteSeconds, range: { fromMs: number; toMs: number } | null): RouteRange {
  const out: RouteRange = { method: rs.method ?? '', route: rs.route ?? '', count: 0, errors: 0, hist: new Map(), maxMs: null };
  const t = Array.isArray(rs.t_ms) ? rs.t_ms : [];
  for (let i = 0; i < t.length; i++) {
    if (typeof t[i] !== 'number') continue;
    if (range && !secondInRange(t[i], range.fromMs, range.toMs)) continue;
    const c = rs.count?.[i];
    if (typeof c === 'number') out.count += c;
    const e = rs.errors?.[i];
    if (typeof e === 'number') out.errors += e;
    addHist(out.hist, rs.hist?.[i]);
    const m = rs.max_ms?.[i];
    if (typeof m === 'number' && (out.maxMs === null || m > out.maxMs)) out.maxMs = m;
  }
  return out;
}
