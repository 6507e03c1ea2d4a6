/**
 * The profile JSON contract (docs/profile-json.md) and its validated,
 * typed-array form. Validation happens once, up front, so drawing code
 * can index arrays without checks and bad data fails with one clear line.
 */

/** Profile JSON, version 1, as produced by crates/stacks. */
export interface ProfileJson {
  version: number;
  title?: string;
  unit?: string;
  kinds: string[];
  frames: { name: string[]; module: string[]; kind: number[] };
  nodes: { parent: number[]; frame: number[] };
  threads?: { pid: number; tid: number; comm: string }[];
  samples: {
    node: number[];
    weight: number[] | null;
    time_ms: number[] | null;
    thread: number[] | null;
  } | null;
  counts: number[] | null;
  start_unix_ns?: number | null;
  duration_ms?: number | null;
}

/** One row of the regression table of a differential profile. */
export interface DiffRow {
  frame: string;
  module: string;
  before_self: number;
  after_self: number;
  before_total: number;
  after_total: number;
  /** Relative change in %; null when BEFORE had none (a new function). */
  delta_self_pct: number | null;
  delta_total_pct: number | null;
  noisy: boolean;
  /** Total as a percent of its side's samples (absent in older files). */
  before_share_pct?: number;
  after_share_pct?: number;
  /** after_share_pct - before_share_pct, percentage points: the ranking key. */
  delta_share_pp?: number;
}

/** Differential profile JSON (`keisoku diff`). */
export interface DiffJson {
  version: number;
  mode: 'absolute' | 'normalized';
  title?: string;
  before: ProfileJson;
  after: ProfileJson;
  table: DiffRow[];
}

/** A thread as named in the profile. */
export interface ThreadInfo {
  pid: number;
  tid: number;
  comm: string;
}

/**
 * Frame names that mean "the CPU had nothing to do". The list is keisoku's
 * one list (crates/common/src/idle.rs), written by every page into its
 * `keisoku-idle-frames` meta element and read once here, so no copy lives
 * in TypeScript. Code outside a page (tests) sets it with setIdleFrames.
 */
let idleFrames: ReadonlySet<string> = readPageIdleFrames();

function readPageIdleFrames(): Set<string> {
  if (typeof document === 'undefined') return new Set();
  const meta = document.querySelector('meta[name="keisoku-idle-frames"]');
  const names = meta?.getAttribute('content') ?? '';
  return new Set(names.split(' ').filter((n) => n.length > 0));
}

/** Replaces the idle-frame list (for code that runs outside a keisoku page). */
export function setIdleFrames(names: Iterable<string>): void {
  idleFrames = new Set(names);
}

/** The idle-frame names in force. */
export function idleFrameNames(): ReadonlySet<string> {
  return idleFrames;
}

/** Error in the embedded profile data (the page shows it instead of drawing). */
export class ProfileError extends Error {}

function arr(v: unknown, what: string): unknown[] {
  if (!Array.isArray(v)) throw new ProfileError(`profile: ${what} must be an array`);
  return v;
}

function ints(v: unknown, what: string, limit: number, min = 0): Int32Array {
  const a = arr(v, what);
  const out = new Int32Array(a.length);
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    if (typeof x !== 'number' || !Number.isInteger(x) || x < min || x >= limit) {
      throw new ProfileError(`profile: ${what}[${i}] = ${JSON.stringify(x)} is not an index below ${limit}`);
    }
    out[i] = x;
  }
  return out;
}

function nums(v: unknown, what: string, len: number): Float64Array {
  const a = arr(v, what);
  if (a.length !== len) throw new ProfileError(`profile: ${what} has ${a.length} entries, expected ${len}`);
  const out = new Float64Array(len);
  for (let i = 0; i < len; i++) {
    const x = a[i];
    if (typeof x !== 'number' || !Number.isFinite(x)) {
      throw new ProfileError(`profile: ${what}[${i}] = ${JSON.stringify(x)} is not a number`);
    }
    out[i] = x;
  }
  return out;
}

function strs(v: unknown, what: string, len: number): string[] {
  const a = arr(v, what);
  if (a.length !== len) throw new ProfileError(`profile: ${what} has ${a.length} entries, expected ${len}`);
  return a.map((x) => (typeof x === 'string' ? x : String(x ?? '')));
}

/** A profile's columns, typed, before the cross-checks of Profile.fromColumns. */
export interface ProfileColumns {
  title: string;
  unit: string;
  frameName: string[];
  frameModule: string[];
  frameKind: string[];
  nodeParent: Int32Array;
  nodeFrame: Int32Array;
  threads: ThreadInfo[];
  samples: { node: Int32Array; weight: Float64Array | null; time: Float64Array | null; thread: Int32Array | null } | null;
  counts: Float64Array | null;
  startUnixNs: number | null;
  /** As embedded; the profile widens it to the last sample time. */
  durationMs: number | null;
}

/** A validated profile with columnar typed arrays. */
export class Profile {
  readonly title: string;
  readonly unit: string;
  readonly frameName: string[];
  readonly frameModule: string[];
  /** Kind name per frame ("kernel", "native", ...). */
  readonly frameKind: string[];
  readonly nodeParent: Int32Array;
  readonly nodeFrame: Int32Array;
  readonly threads: ThreadInfo[];
  readonly sampleNode: Int32Array | null;
  readonly sampleWeight: Float64Array | null;
  readonly sampleTime: Float64Array | null;
  readonly sampleThread: Int32Array | null;
  /** Self weight per node when the input had no per-sample data. */
  readonly counts: Float64Array | null;
  readonly startUnixNs: number | null;
  readonly durationMs: number | null;
  private idleCache: Uint8Array | null = null;

  private constructor(c: ProfileColumns) {
    this.title = c.title;
    this.unit = c.unit;
    this.frameName = c.frameName;
    this.frameModule = c.frameModule;
    this.frameKind = c.frameKind;
    this.nodeParent = c.nodeParent;
    this.nodeFrame = c.nodeFrame;
    this.threads = c.threads;
    this.sampleNode = c.samples?.node ?? null;
    this.sampleWeight = c.samples?.weight ?? null;
    this.sampleTime = c.samples?.time ?? null;
    this.sampleThread = c.samples?.thread ?? null;
    this.counts = c.samples ? null : c.counts;
    this.startUnixNs = c.startUnixNs;
    let dur = c.durationMs;
    if (this.sampleTime && this.sampleTime.length > 0) {
      let max = 0;
      for (let i = 0; i < this.sampleTime.length; i++) if (this.sampleTime[i] > max) max = this.sampleTime[i];
      dur = Math.max(dur ?? 0, max);
    }
    this.durationMs = dur;
  }

  /**
   * A profile from typed columns (the compact in-page form): checks every
   * index and length, throws ProfileError naming the first bad one.
   */
  static fromColumns(c: ProfileColumns): Profile {
    const nf = c.frameName.length;
    const nn = c.nodeParent.length;
    if (c.frameModule.length !== nf || c.frameKind.length !== nf) throw new ProfileError(`profile: frame columns disagree on the frame count (${nf})`);
    if (c.nodeFrame.length !== nn) throw new ProfileError(`profile: nodes.frame has ${c.nodeFrame.length} entries, expected ${nn}`);
    for (let i = 0; i < nn; i++) {
      const p = c.nodeParent[i];
      if (p < -1 || p >= i) throw new ProfileError(`profile: nodes.parent[${i}] = ${p} must be below ${i}`);
      const f = c.nodeFrame[i];
      if (f < 0 || f >= nf) throw new ProfileError(`profile: nodes.frame[${i}] = ${f} is not an index below ${nf}`);
    }
    const s = c.samples;
    if ((s === null) === (c.counts === null)) throw new ProfileError('profile: exactly one of "samples" and "counts" must be present');
    if (s) {
      const ns = s.node.length;
      for (let i = 0; i < ns; i++) if (s.node[i] < 0 || s.node[i] >= nn) throw new ProfileError(`profile: samples.node[${i}] = ${s.node[i]} is not an index below ${nn}`);
      for (const [a, what] of [[s.weight, 'samples.weight'], [s.time, 'samples.time_ms'], [s.thread, 'samples.thread']] as const) {
        if (a && a.length !== ns) throw new ProfileError(`profile: ${what} has ${a.length} entries, expected ${ns}`);
      }
      if (s.thread) {
        const nt = c.threads.length;
        if (nt === 0) throw new ProfileError('profile: samples.thread given but "threads" is empty');
        for (let i = 0; i < ns; i++) if (s.thread[i] < 0 || s.thread[i] >= nt) throw new ProfileError(`profile: samples.thread[${i}] = ${s.thread[i]} is not an index below ${nt}`);
      }
    } else if (c.counts && c.counts.length !== nn) throw new ProfileError(`profile: counts has ${c.counts.length} entries, expected ${nn}`);
    return new Profile(c);
  }

  /** Profile JSON v1 (already JSON-parsed) into typed columns. */
  private static columnsOf(j: ProfileJson): ProfileColumns {
    if (j.version !== 1) throw new ProfileError(`profile: version ${String(j.version)} is not supported (expected 1)`);
    const kinds = arr(j.kinds, 'kinds').map(String);
    if (!j.frames || !j.nodes) throw new ProfileError('profile: "frames" and "nodes" are required');
    const nf = arr(j.frames.name, 'frames.name').length;
    const kindIdx = ints(j.frames.kind, 'frames.kind', Math.max(kinds.length, 1));
    if (kindIdx.length !== nf) throw new ProfileError(`profile: frames.kind has ${kindIdx.length} entries, expected ${nf}`);
    const nn = arr(j.nodes.parent, 'nodes.parent').length;
    // Node order first: a broken tree is the likelier cause of any later error.
    const nodeParent = ints(j.nodes.parent, 'nodes.parent', nn, -1);
    for (let i = 0; i < nn; i++) {
      if (nodeParent[i] >= i) throw new ProfileError(`profile: nodes.parent[${i}] = ${nodeParent[i]} must be below ${i}`);
    }
    const threads = Array.isArray(j.threads)
      ? j.threads.map((t) => ({ pid: Number(t?.pid) || 0, tid: Number(t?.tid) || 0, comm: String(t?.comm ?? '') }))
      : [];
    if ((j.samples == null) === (j.counts == null)) {
      throw new ProfileError('profile: exactly one of "samples" and "counts" must be present');
    }
    let samples: ProfileColumns['samples'] = null;
    if (j.samples) {
      const s = j.samples;
      const node = ints(s.node, 'samples.node', nn);
      const ns = node.length;
      samples = {
        node,
        weight: s.weight == null ? null : nums(s.weight, 'samples.weight', ns),
        time: s.time_ms == null ? null : nums(s.time_ms, 'samples.time_ms', ns),
        thread: s.thread == null ? null : ints(s.thread, 'samples.thread', Math.max(threads.length, 1)),
      };
    }
    return {
      title: typeof j.title === 'string' ? j.title : 'profile',
      unit: typeof j.unit === 'string' ? j.unit : 'samples',
      frameName: strs(j.frames.name, 'frames.name', nf),
      frameModule: strs(j.frames.module, 'frames.module', nf),
      frameKind: Array.from(kindIdx, (k) => kinds[k] ?? 'unknown'),
      nodeParent,
      nodeFrame: ints(j.nodes.frame, 'nodes.frame', nf),
      threads,
      samples,
      counts: j.samples ? null : nums(j.counts, 'counts', nn),
      startUnixNs: typeof j.start_unix_ns === 'number' ? j.start_unix_ns : null,
      durationMs: typeof j.duration_ms === 'number' && Number.isFinite(j.duration_ms) ? j.duration_ms : null,
    };
  }

  /** Validates parsed JSON; throws ProfileError naming the bad field. */
  static from(json: unknown): Profile {
    if (!json || typeof json !== 'object') throw new ProfileError('profile: expected a JSON object');
    return Profile.fromColumns(Profile.columnsOf(json as ProfileJson));
  }

  get nodeCount(): number {
    return this.nodeParent.length;
  }

  get frameCount(): number {
    return this.frameName.length;
  }

  /** Number of samples (per-sample form) or null (counts form). */
  get sampleCount(): number | null {
    return this.sampleNode ? this.sampleNode.length : null;
  }

  /** 1 for nodes whose stack contains an idle frame. */
  idleNodes(): Uint8Array {
    if (this.idleCache) return this.idleCache;
    const idleFrame = new Uint8Array(this.frameCount);
    for (let f = 0; f < this.frameCount; f++) if (idleFrames.has(this.frameName[f])) idleFrame[f] = 1;
    const out = new Uint8Array(this.nodeCount);
    for (let n = 0; n < this.nodeCount; n++) {
      const p = this.nodeParent[n];
      out[n] = idleFrame[this.nodeFrame[n]] | (p >= 0 ? out[p] : 0);
    }
    this.idleCache = out;
    return out;
  }

  /** A thread's label: "comm pid/tid". */
  threadLabel(i: number): string {
    const t = this.threads[i];
    if (!t) return `thread ${i}`;
    return `${t.comm || '?'} ${t.pid}/${t.tid}`;
  }

  private processNameCache: Map<number, string> | null = null;

  /**
   * The name of process `pid`: the comm that has the most sample weight
   * among its threads, so a shell that exec'd node is "node", not the name
   * it had for its first few samples; on a tie, the comm of the earlier
   * thread. crates/report/src/embed.rs names the preview's process roots
   * by the same rule, summing in the same order, so both agree exactly.
   */
  processName(pid: number): string {
    if (!this.processNameCache) {
      const byThread = new Float64Array(this.threads.length);
      const st = this.sampleThread;
      if (st) for (let i = 0; i < st.length; i++) byThread[st[i]] += this.sampleWeight ? this.sampleWeight[i] : 1;
      // Per process, each comm's total in the order its first thread comes.
      const sums = new Map<number, Map<string, number>>();
      this.threads.forEach((t, i) => {
        let m = sums.get(t.pid);
        if (!m) sums.set(t.pid, (m = new Map()));
        m.set(t.comm, (m.get(t.comm) ?? 0) + byThread[i]);
      });
      this.processNameCache = new Map();
      for (const [p, m] of sums) {
        let best: [string, number] | null = null;
        for (const [c, w] of m) if (best === null || w > best[1]) best = [c, w];
        this.processNameCache.set(p, best ? best[0] : '');
      }
    }
    return this.processNameCache.get(pid) || '?';
  }
}
