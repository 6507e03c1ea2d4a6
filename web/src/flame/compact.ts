/**
 * The compact in-page profile form (docs/profile-json.md, "In HTML pages"),
 * written by crates/report/src/embed.rs. The page data holds a small header
 * (and, for large profiles, a coarse preview tree to draw at once); the
 * columns follow the page script as `<script type="text/plain">` elements,
 * mostly text varints, so they are read only after the first paint and
 * decoded without JSON.parse.
 */
import { CallTree, FuncTable } from './tree';
import { Profile, ProfileError, ThreadInfo } from './profile';

/** The coarse call tree Rust computed: frames wide enough to see. */
export interface PreviewJson {
  /** The tree leaves idle samples out (the page opens with idle hidden). */
  hide_idle: boolean;
  min_share: number;
  /**
   * "process": the root's children are one group per process (as the
   * page opens a profile of two or more processes), labelled as
   * Profile.processName labels them; absent or "merge": no groups.
   */
  split?: 'merge' | 'process';
  frames: { name: string[]; module: string[]; kind: number[] };
  /** Node 0 is the root; parent ids are below child ids. */
  parent: number[];
  /** Index into `frames`; -1 for the root. */
  frame: number[];
  self: number[];
}

/** The profile object in the page data of a compact page. */
export interface CompactHeader {
  version: number;
  encoding: 'compact-1';
  title?: string;
  unit?: string;
  kinds: string[];
  threads?: ThreadInfo[];
  start_unix_ns?: number | null;
  duration_ms?: number | null;
  frame_count: number;
  node_count: number;
  sample_count: number | null;
  has: { weight: boolean; time: boolean; thread: boolean; counts: boolean };
  /** Unit of the time deltas in nanoseconds (null: times are JSON). */
  time_unit_ns: number | null;
  preview: PreviewJson | null;
}

/** True for the header of a compact page (as opposed to profile JSON v1). */
export function isCompact(x: unknown): x is CompactHeader {
  return !!x && typeof x === 'object' && (x as { encoding?: unknown }).encoding === 'compact-1';
}

/** Resolves once the whole document (and so every column) is parsed. */
export function whenParsed(doc: Document = document): Promise<void> {
  if (doc.readyState !== 'loading') return Promise.resolve();
  return new Promise((resolve) => doc.addEventListener('DOMContentLoaded', () => resolve(), { once: true }));
}

/** Varint alphabet start: `0` (see embed.rs). */
const BASE = 48;

interface RawColumn {
  enc: string;
  text: string;
}

function column(doc: Document, id: string): RawColumn {
  const el = doc.getElementById(`keisoku-col-${id}`);
  if (!el) throw new ProfileError(`profile: the page has no "${id}" column (was the file cut short?)`);
  return { enc: el.dataset.enc ?? '', text: el.textContent ?? '' };
}

/** Decodes `n` text varints below 2^31 (ids, counts of small things). */
function intVarints(text: string, n: number, what: string): Int32Array {
  const out = new Int32Array(n);
  let k = 0;
  let v = 0;
  let shift = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i) - BASE;
    if (c < 0 || c > 63) throw new ProfileError(`profile: ${what} has a bad character at offset ${i}`);
    v |= (c & 31) << shift;
    if (c >= 32) {
      shift += 5;
      if (shift > 25) throw new ProfileError(`profile: ${what} has a value too large at offset ${i}`);
      continue;
    }
    if (k >= n) throw new ProfileError(`profile: ${what} has more than ${n} values`);
    out[k++] = v;
    v = 0;
    shift = 0;
  }
  if (shift !== 0) throw new ProfileError(`profile: ${what} ends inside a value`);
  if (k !== n) throw new ProfileError(`profile: ${what} has ${k} values, expected ${n}`);
  return out;
}

/** Decodes `n` text varints up to 2^53 into doubles. */
function bigVarints(text: string, n: number, what: string): Float64Array {
  const out = new Float64Array(n);
  let k = 0;
  let v = 0;
  let mul = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i) - BASE;
    if (c < 0 || c > 63) throw new ProfileError(`profile: ${what} has a bad character at offset ${i}`);
    v += (c & 31) * mul;
    if (c >= 32) {
      mul *= 32;
      if (mul > 2 ** 53) throw new ProfileError(`profile: ${what} has a value too large at offset ${i}`);
      continue;
    }
    if (k >= n) throw new ProfileError(`profile: ${what} has more than ${n} values`);
    out[k++] = v;
    v = 0;
    mul = 1;
  }
  if (mul !== 1) throw new ProfileError(`profile: ${what} ends inside a value`);
  if (k !== n) throw new ProfileError(`profile: ${what} has ${k} values, expected ${n}`);
  return out;
}

function jsonNumbers(text: string, n: number, what: string): Float64Array {
  let a: unknown;
  try {
    a = JSON.parse(text);
  } catch {
    throw new ProfileError(`profile: ${what} is not valid JSON`);
  }
  if (!Array.isArray(a) || a.length !== n) throw new ProfileError(`profile: ${what} must be a list of ${n} numbers`);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const x = a[i];
    if (typeof x !== 'number' || !Number.isFinite(x)) throw new ProfileError(`profile: ${what}[${i}] = ${JSON.stringify(x)} is not a number`);
    out[i] = x;
  }
  return out;
}

function numbers(c: RawColumn, n: number, what: string): Float64Array {
  if (c.enc === 'varint') return bigVarints(c.text, n, what);
  if (c.enc === 'json') return jsonNumbers(c.text, n, what);
  throw new ProfileError(`profile: ${what} has an unknown encoding "${c.enc}"`);
}

function ints(c: RawColumn, n: number, what: string): Int32Array {
  if (c.enc !== 'varint') throw new ProfileError(`profile: ${what} has an unknown encoding "${c.enc}"`);
  return intVarints(c.text, n, what);
}

/** Sample times in ms: zigzag deltas times the unit, exactly as embed.rs checked. */
function times(c: RawColumn, n: number, unitNs: number | null): Float64Array {
  if (c.enc === 'json') return jsonNumbers(c.text, n, 'sample times');
  if (c.enc !== 'delta-zigzag' || !unitNs) throw new ProfileError(`profile: sample times have an unknown encoding "${c.enc}"`);
  const z = bigVarints(c.text, n, 'sample times');
  let sum = 0;
  for (let i = 0; i < n; i++) {
    const d = z[i];
    sum += d % 2 === 0 ? d / 2 : -(d + 1) / 2;
    z[i] = (sum * unitNs) / 1e6;
  }
  return z;
}

function count(x: unknown, what: string): number {
  if (typeof x !== 'number' || !Number.isInteger(x) || x < 0) throw new ProfileError(`profile: ${what} must be a whole number`);
  return x;
}

/** Lets the browser handle input and paint between two slices of work. */
export function nextTask(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * Reads every column of a compact page into a validated Profile, yielding
 * to the browser between columns so the preview on screen stays responsive
 * (hover, scroll) while a million samples are decoded.
 */
export async function decodeCompact(h: CompactHeader, doc: Document = document, pause: () => Promise<void> = nextTask): Promise<Profile> {
  if (h.version !== 1) throw new ProfileError(`profile: version ${String(h.version)} is not supported (expected 1)`);
  const nf = count(h.frame_count, 'frame_count');
  const nn = count(h.node_count, 'node_count');
  const kinds = Array.isArray(h.kinds) ? h.kinds.map(String) : [];
  const frames = JSON.parse(column(doc, 'frames').text) as { name?: unknown; modules?: unknown };
  if (!Array.isArray(frames.name) || frames.name.length !== nf || !Array.isArray(frames.modules)) {
    throw new ProfileError(`profile: the frames column must hold ${nf} names and a module list`);
  }
  const modules = frames.modules.map((m) => (typeof m === 'string' ? m : String(m ?? '')));
  await pause();
  const moduleIdx = ints(column(doc, 'frame-module'), nf, 'frame modules');
  const kindIdx = ints(column(doc, 'frame-kind'), nf, 'frame kinds');
  const frameModule = new Array<string>(nf);
  const frameKind = new Array<string>(nf);
  for (let f = 0; f < nf; f++) {
    const m = modules[moduleIdx[f]];
    if (m === undefined) throw new ProfileError(`profile: frame ${f} names module ${moduleIdx[f]} of ${modules.length}`);
    frameModule[f] = m;
    frameKind[f] = kinds[kindIdx[f]] ?? 'unknown';
  }
  await pause();
  // Parents are stored as the distance back from the node (roots: i + 1).
  const nodeParent = ints(column(doc, 'node-parent'), nn, 'node parents');
  for (let i = 0; i < nn; i++) nodeParent[i] = i - nodeParent[i];
  await pause();
  const nodeFrame = ints(column(doc, 'node-frame'), nn, 'node frames');
  let sample: Parameters<typeof Profile.fromColumns>[0]['samples'] = null;
  let counts: Float64Array | null = null;
  if (h.sample_count !== null) {
    const ns = count(h.sample_count, 'sample_count');
    await pause();
    const node = ints(column(doc, 'sample-node'), ns, 'sample nodes');
    await pause();
    const weight = h.has.weight ? numbers(column(doc, 'sample-weight'), ns, 'sample weights') : null;
    const time = h.has.time ? times(column(doc, 'sample-time'), ns, h.time_unit_ns) : null;
    await pause();
    const thread = h.has.thread ? ints(column(doc, 'sample-thread'), ns, 'sample threads') : null;
    sample = { node, weight, time, thread };
  } else counts = numbers(column(doc, 'counts'), nn, 'counts');
  await pause();
  return Profile.fromColumns({
    title: typeof h.title === 'string' ? h.title : 'profile',
    unit: typeof h.unit === 'string' ? h.unit : 'samples',
    frameName: frames.name.map((x) => (typeof x === 'string' ? x : String(x ?? ''))),
    frameModule,
    frameKind,
    nodeParent,
    nodeFrame,
    threads: Array.isArray(h.threads) ? h.threads.map((t) => ({ pid: Number(t?.pid) || 0, tid: Number(t?.tid) || 0, comm: String(t?.comm ?? '') })) : [],
    samples: sample,
    counts,
    startUnixNs: typeof h.start_unix_ns === 'number' ? h.start_unix_ns : null,
    durationMs: typeof h.duration_ms === 'number' && Number.isFinite(h.duration_ms) ? h.duration_ms : null,
  });
}

/** The preview as a call tree (null when the page has none or it is malformed). */
export function previewTree(h: CompactHeader): CallTree | null {
  const p = h.preview;
  if (!p || !Array.isArray(p.parent) || !Array.isArray(p.frame) || !Array.isArray(p.self)) return null;
  const n = p.parent.length;
  const fr = p.frames;
  const nf = fr && Array.isArray(fr.name) && Array.isArray(fr.module) && Array.isArray(fr.kind) && fr.module.length === fr.name.length && fr.kind.length === fr.name.length ? fr.name.length : -1;
  if (n < 1 || p.frame.length !== n || p.self.length !== n || nf < 0) return null;
  const kinds = Array.isArray(h.kinds) ? h.kinds.map(String) : [];
  const funcs: FuncTable = {
    name: p.frames.name.map(String).concat('all'),
    module: p.frames.module.map(String).concat(''),
    kind: p.frames.kind.map((k) => kinds[k] ?? 'unknown').concat('root'),
  };
  const parent = new Int32Array(n);
  const func = new Int32Array(n);
  const self = new Float64Array(n);
  func[0] = nf;
  for (let i = 1; i < n; i++) {
    const q = p.parent[i];
    const f = p.frame[i];
    const w = p.self[i];
    if (!Number.isInteger(q) || q < 0 || q >= i || !Number.isInteger(f) || f < 0 || f >= nf || typeof w !== 'number' || !(w >= 0)) return null;
    parent[i] = q;
    func[i] = f;
    self[i] = w;
  }
  self[0] = Number(p.self[0]) || 0;
  if (p.split === 'process') {
    // The root's children are the process groups: the kind the function
    // table, colours and the split menu know them by.
    for (let i = 1; i < n; i++) if (parent[i] === 0) funcs.kind[func[i]] = 'process';
  }
  const tree = new CallTree(funcs, parent, func, self);
  tree.sampleCount = p.hide_idle ? null : h.sample_count;
  return tree;
}
