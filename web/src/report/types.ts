/**
 * The Run JSON a report embeds (docs/run-json.md). Every field is read
 * defensively: a run recorded without load, profile or access log simply
 * lacks those parts and the report says "not recorded".
 */
import type { ProfileJson } from '../flame/profile';

export interface RunMeta {
  id?: string;
  name?: string;
  tags?: Record<string, string>;
  started_unix_ms?: number;
  duration_ms?: number;
  target?: string;
  command?: string;
  machine?: { hostname?: string; cores?: number; kernel?: string; memory_bytes?: number; cpu_model?: string };
  interrupted?: boolean;
  status?: string;
  model?: string;
}

export interface Latency {
  min?: number;
  mean?: number;
  max?: number;
  stdev?: number;
  p50?: number;
  p75?: number;
  p80?: number;
  p90?: number;
  p95?: number;
  p99?: number;
  'p99.9'?: number;
  'p99.99'?: number;
}

/** One clause of the SLO verdict (crates/load `ClauseVerdict`). */
export interface SloClause {
  clause: string;
  pass: boolean;
  measured: number;
  limit: number;
  unit: string;
  margin: number;
  margin_pct?: number;
}

export interface SloVerdict {
  pass: boolean;
  clauses: SloClause[];
}

export interface PhaseStats {
  index?: number;
  label?: string;
  connections?: number | null;
  rate?: number | null;
  start_ms?: number;
  end_ms?: number;
  requests?: number;
  rps?: number;
  errors?: number | Record<string, number>;
  latency_ms?: Latency;
  slo?: SloVerdict | null;
  /** Responses by class ("2xx": n). */
  status?: Record<string, number>;
  /** Responses by exact code ("503": n), contract 1. */
  status_codes?: Record<string, number>;
  errors_by_kind?: Record<string, number>;
}

/** The object `keisoku bench --json` prints (docs/bench-json.md). */
export interface BenchResults extends PhaseStats {
  model?: string;
  partial?: boolean;
  duration_ms?: number;
  bytes_per_s?: number;
  phases?: PhaseStats[];
  targets?: (PhaseStats & { method?: string; url?: string })[];
  knee?: number | null;
  slo?: SloVerdict | null;
  best_passing_phase?: number | null;
  max_rate?: number | null;
  warnings?: string[];
  error_reasons?: string[];
}

export interface RunPhase {
  index: number;
  label: string;
  start_ms: number;
  end_ms: number;
  warmup?: boolean;
  connections?: number | null;
  rate?: number | null;
}

export interface Series {
  name: string;
  unit: string;
  t_ms: number[];
  v: (number | null)[];
}

/** One alp-like route row; numeric columns by name. */
export type RouteRow = Record<string, string | number | null>;

/** A frame a finding points at, with its share of the samples (0..1). */
export interface FindingFrame {
  name: string;
  module?: string;
  share?: number;
}

/**
 * A finding (crates/findings). `evidence` may be structured (below) or
 * plain text lines; the report shows whatever is present.
 */
export interface Finding {
  id?: string;
  rule?: string;
  title: string;
  severity?: string;
  score?: number;
  summary?: string;
  impact?: string;
  suggestion?: string;
  evidence?: string | string[] | FindingEvidence;
}

export interface FindingEvidence {
  text?: string[] | string;
  series?: string[];
  range_ms?: [number, number] | null;
  phases?: number[];
  frames?: FindingFrame[];
}

/**
 * One route's per-second numbers (contract 3): arrays parallel, one entry
 * per second with requests; `hist[i]` is that second's latency histogram as
 * sparse log buckets [k, n] (web/src/report/buckets.ts).
 */
export interface RouteSeconds {
  method?: string;
  route?: string;
  t_ms: number[];
  count: number[];
  errors?: number[];
  p50_ms?: number[];
  p99_ms?: number[];
  max_ms?: number[];
  hist?: [number, number][][];
}

export interface RunJson {
  version: number;
  run: RunMeta;
  results?: BenchResults | null;
  phases?: RunPhase[];
  series?: Series[];
  routes?: { client?: RouteRow[]; access_log?: RouteRow[] };
  profile?: ProfileJson | null;
  /** The wall-clock profile (py-spy --idle: every thread at every tick, waiting or running), when one was recorded. */
  wall_profile?: ProfileJson | null;
  findings?: Finding[];
  route_seconds?: { client?: RouteSeconds[]; access_log?: RouteSeconds[] };
}

/** What crates/report embeds in a report page. */
export interface ReportData {
  served: boolean;
  range_ms: [number, number] | null;
  /** The profile's sample times as microsecond deltas (crates/report moves them here to keep pages small). */
  profile_time_delta_us?: number[] | null;
  run: RunJson;
}
