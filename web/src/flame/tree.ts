/**
 * The merged call tree a flame graph draws, built from a profile's columnar
 * data with typed arrays: one pass over the samples aggregates weight per
 * stack node, then each distinct stack is mapped into the tree once, so the
 * cost grows with distinct stacks, not with samples.
 */
import { Profile } from './profile';

/** Function identities for a tree: index = func id. */
export interface FuncTable {
  name: string[];
  module: string[];
  kind: string[];
}

/** How samples are grouped under the root. */
export type SplitMode = 'merge' | 'process' | 'thread';

/** Filters and transforms applied while building a tree. */
export interface TreeOptions {
  /** Keep samples with fromMs <= time_ms < toMs (ignored without times). */
  fromMs?: number | null;
  toMs?: number | null;
  /** Keep only samples of these thread indices (null: all). */
  threads?: ReadonlySet<number> | null;
  /** Group by process or thread with a synthetic frame under the root. */
  split?: SplitMode;
  /** Frames whose name matches are elided from every stack. */
  hide?: RegExp | null;
  /** Keep only stacks through this frame name, re-rooted at its outermost call. */
  focus?: string | null;
  /** Leaf-first stacks (callers of each function). */
  invert?: boolean;
  /**
   * Keep only stacks through this frame name, cut at its outermost call and
   * read leaf-first from it: the function at the root, its callers above
   * (the upper half of a sandwich view). Wins over `focus` and `invert`.
   */
  callers?: string | null;
  /**
   * Children ordered heaviest first instead of by name (left-heavy):
   * identical stacks are merged either way, this only moves the widest to
   * the left so the dominant paths line up.
   */
  leftHeavy?: boolean;
  /** Drop samples whose stack contains an idle frame. */
  hideIdle?: boolean;
  /**
   * Keep only the samples whose index is 1 here (null: all): the samples
   * under one box of a time-ordered tree, merged to count them exactly.
   */
  sampleMask?: Uint8Array | null;
  /**
   * Preview: leave out nodes lighter than this share of the total (their
   * weight moves to the parent's self, so widths stay exact). Only for
   * untransformed trees; a first paint needs nothing thinner than a pixel.
   */
  minShare?: number;
}

/**
 * A call tree in struct-of-arrays form. Node 0 is the root ("all");
 * parent ids are below child ids, children are sorted by name (so layouts
 * are stable between runs), and `x` is each node's offset in weight units.
 */
export class CallTree {
  readonly n: number;
  readonly funcs: FuncTable;
  readonly parent: Int32Array;
  readonly func: Int32Array;
  readonly depth: Int32Array;
  readonly self: Float64Array;
  readonly total: Float64Array;
  readonly x: Float64Array;
  /** Children of node i are childList[childStart[i] .. childStart[i+1]). */
  readonly childStart: Int32Array;
  readonly childList: Int32Array;
  readonly maxDepth: number;
  /** Samples (not weight) that went into the tree, when known. */
  sampleCount: number | null = null;
  /**
   * Leaf-first (inverted) stacks: a function's own (self) weight is then
   * where it sits right under the root or a process/thread group, not at
   * the end of a path (which is the outermost caller).
   */
  inverted = false;
  /**
   * Weight of every sample the tree was built from before a focus dropped
   * the stacks not through the focused function; null when nothing was
   * dropped. "Of all" shares divide by it, so a 1% function stays 1%.
   */
  wholeTotal: number | null = null;
  /**
   * A time-ordered tree drawn at a resolution (too many boxes to draw them
   * all): boxes lighter than `minWeight` (1/`resolution` of the view)
   * were folded into their callers, `boxes` of them. Null: every box is there.
   * A box's `self` is then its own samples only: what was folded into it
   * is the gap between its callees, counted by `exactAt`.
   */
  foldedBelow: { minWeight: number; boxes: number; resolution: number } | null = null;
  /**
   * Set when boxes were folded (foldedBelow): the samples under a node,
   * merged into an exact call tree with the same functions, and the node
   * there that stands for it. What is read as numbers (search shares,
   * function table, callers and callees) comes from it, so folding only
   * changes what is drawn, never a count. Null: this tree is exact.
   */
  exactAt: ((node: number) => { tree: CallTree; node: number }) | null = null;

  /** The weight "of all" shares divide by: the whole before any focus. */
  get allTotal(): number {
    return this.wholeTotal ?? this.total[0];
  }

  constructor(funcs: FuncTable, parent: Int32Array, func: Int32Array, self: Float64Array, ranks?: Int32Array) {
    this.funcs = funcs;
    this.n = parent.length;
    this.parent = parent;
    this.func = func;
    this.self = self;
    const n = this.n;
    const depth = new Int32Array(n);
    const total = Float64Array.from(self);
    let maxDepth = 0;
    for (let i = 1; i < n; i++) {
      const d = depth[parent[i]] + 1;
      depth[i] = d;
      if (d > maxDepth) maxDepth = d;
    }
    for (let i = n - 1; i > 0; i--) total[parent[i]] += total[i];
    this.depth = depth;
    this.total = total;
    this.maxDepth = maxDepth;

    // Children in CSR form, sorted by function name rank.
    const count = new Int32Array(n + 1);
    for (let i = 1; i < n; i++) count[parent[i] + 1]++;
    for (let i = 0; i < n; i++) count[i + 1] += count[i];
    const childStart = Int32Array.from(count);
    const childList = new Int32Array(Math.max(0, n - 1));
    if (!ranks && n < SMALL_TREE) {
      // Small trees (previews): sort each child list by name directly,
      // cheaper than ranking every name of a large profile.
      const fill = Int32Array.from(count);
      for (let i = 1; i < n; i++) childList[fill[parent[i]]++] = i;
      const names = funcs.name;
      for (let i = 0; i < n; i++) {
        const a = childStart[i];
        const b = childStart[i + 1];
        if (b - a > 1) {
          childList.subarray(a, b).sort((p, q) => {
            const x = names[func[p]];
            const y = names[func[q]];
            return x < y ? -1 : x > y ? 1 : func[p] - func[q] || p - q;
          });
        }
      }
    } else {
      // Fill each parent's slots in name-rank order (a counting sort over
      // ranks), so every child list comes out sorted without per-node sorts.
      const rank = ranks && ranks.length === funcs.name.length ? ranks : nameRanks(funcs.name);
      const byRank = new Int32Array(funcs.name.length + 1);
      for (let i = 1; i < n; i++) byRank[rank[func[i]] + 1]++;
      for (let r = 0; r < funcs.name.length; r++) byRank[r + 1] += byRank[r];
      const ordered = new Int32Array(Math.max(0, n - 1));
      for (let i = 1; i < n; i++) ordered[byRank[rank[func[i]]]++] = i;
      const fill = Int32Array.from(count);
      for (let k = 0; k < ordered.length; k++) {
        const c = ordered[k];
        childList[fill[parent[c]]++] = c;
      }
    }
    this.childStart = childStart;
    this.childList = childList;

    const x = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      let cur = x[i];
      for (let k = childStart[i]; k < childStart[i + 1]; k++) {
        const c = childList[k];
        x[c] = cur;
        cur += total[c];
      }
    }
    this.x = x;
  }

  /** The name of a node's function. */
  name(node: number): string {
    return this.funcs.name[this.func[node]];
  }

  /** Path from the root (exclusive) to `node` (inclusive). */
  path(node: number): number[] {
    const out: number[] = [];
    for (let n = node; n > 0; n = this.parent[n]) out.push(n);
    return out.reverse();
  }

  /** True when `a` is `b` or one of its ancestors. */
  isAncestorOrSelf(a: number, b: number): boolean {
    for (let n = b; n >= 0; n = n === 0 ? -1 : this.parent[n]) if (n === a) return true;
    return false;
  }

  /**
   * How child lists are ordered: by name as built, heaviest first, or in
   * node creation order (builders that append nodes as they meet them,
   * such as the time-ordered tree, which sets it).
   */
  order: 'name' | 'weight' | 'creation' = 'name';
  /** The by-name child lists, kept when reordering so going back is a copy. */
  private byName: Int32Array | null = null;

  /**
   * Reorders every child list in place and lays out `x` again: the same
   * tree (node ids, totals, function stats) in another left-to-right order,
   * so a mode switch needs no rebuild.
   */
  orderChildren(by: 'name' | 'weight' | 'creation'): void {
    if (by === this.order) return;
    const { childStart, childList, total } = this;
    if (this.order === 'name' && !this.byName) this.byName = childList.slice();
    if (by === 'name' && this.byName) childList.set(this.byName);
    else {
      const names = this.funcs.name;
      const func = this.func;
      for (let i = 0; i < this.n; i++) {
        const a = childStart[i];
        const b = childStart[i + 1];
        if (b - a < 2) continue;
        const seg = childList.subarray(a, b);
        if (by === 'weight') seg.sort((p, q) => total[q] - total[p] || p - q);
        else if (by === 'creation') seg.sort((p, q) => p - q);
        else seg.sort((p, q) => (names[func[p]] < names[func[q]] ? -1 : names[func[p]] > names[func[q]] ? 1 : func[p] - func[q] || p - q));
      }
    }
    this.order = by;
    const x = this.x;
    for (let i = 0; i < this.n; i++) {
      let cur = x[i];
      for (let k = childStart[i]; k < childStart[i + 1]; k++) {
        const c = childList[k];
        x[c] = cur;
        cur += total[c];
      }
    }
  }

  /** Node ids of the subtree under `root` (inclusive), preorder. */
  *subtree(root: number): Generator<number> {
    const stack = [root];
    while (stack.length) {
      const n = stack.pop() as number;
      yield n;
      for (let k = this.childStart[n + 1] - 1; k >= this.childStart[n]; k--) stack.push(this.childList[k]);
    }
  }
}

const rankCache = new WeakMap<string[], Int32Array>();

/**
 * Name ranks of a profile's frames (cached per profile) plus the synthetic
 * functions after them, by name among themselves: process roots line up
 * alphabetically, as the SVG's (flamegraph.pl sorts its stacks) and the
 * preview's do.
 */
function profileRanks(frameNames: string[], funcNames: string[]): Int32Array {
  let base = rankCache.get(frameNames);
  if (!base) {
    base = nameRanks(frameNames);
    rankCache.set(frameNames, base);
  }
  const out = new Int32Array(funcNames.length);
  out.set(base);
  const extra = nameRanks(funcNames.slice(base.length));
  for (let i = 0; i < extra.length; i++) out[base.length + i] = base.length + extra[i];
  return out;
}

/** Below this many nodes a tree sorts its child lists by name directly. */
const SMALL_TREE = 50_000;

/** Rank of each name in sorted order (ties share order by id). */
export function nameRanks(names: string[]): Int32Array {
  const ids = Array.from(names, (_, i) => i);
  ids.sort((a, b) => (names[a] < names[b] ? -1 : names[a] > names[b] ? 1 : a - b));
  const rank = new Int32Array(names.length);
  for (let r = 0; r < ids.length; r++) rank[ids[r]] = r;
  return rank;
}

/**
 * Grows a call tree node by node, merging equal (parent, function) pairs
 * through an open-addressing hash table on typed arrays: several times
 * faster than a Map at millions of nodes.
 */
class Builder {
  n = 1;
  parent = new Int32Array(1024);
  func = new Int32Array(1024);
  self = new Float64Array(1024);
  private slots = new Int32Array(2048).fill(-1);
  private mask = 2047;

  private static hash(p: number, f: number): number {
    return (Math.imul(p, 0x9e3779b1) ^ Math.imul(f + 1, 0x85ebca77)) >>> 0;
  }

  child(p: number, f: number): number {
    let i = Builder.hash(p, f) & this.mask;
    for (;;) {
      const c = this.slots[i];
      if (c < 0) break;
      if (this.parent[c] === p && this.func[c] === f) return c;
      i = (i + 1) & this.mask;
    }
    const c = this.n++;
    if (c >= this.parent.length) this.growNodes();
    this.parent[c] = p;
    this.func[c] = f;
    this.slots[i] = c;
    if (this.n * 2 > this.slots.length) this.rehash();
    return c;
  }

  private growNodes(): void {
    const cap = this.parent.length * 2;
    const grow = <T extends Int32Array | Float64Array>(a: T, make: (n: number) => T): T => {
      const b = make(cap);
      b.set(a);
      return b;
    };
    this.parent = grow(this.parent, (n) => new Int32Array(n));
    this.func = grow(this.func, (n) => new Int32Array(n));
    this.self = grow(this.self, (n) => new Float64Array(n));
  }

  private rehash(): void {
    const size = this.slots.length * 2;
    this.slots = new Int32Array(size).fill(-1);
    this.mask = size - 1;
    for (let c = 1; c < this.n; c++) {
      let i = Builder.hash(this.parent[c], this.func[c]) & this.mask;
      while (this.slots[i] >= 0) i = (i + 1) & this.mask;
      this.slots[i] = c;
    }
  }

  /** The finished tree's columns, trimmed to size. */
  columns(): [Int32Array, Int32Array, Float64Array] {
    return [this.parent.slice(0, this.n), this.func.slice(0, this.n), this.self.slice(0, this.n)];
  }
}

/**
 * How a profile's graph opens: one root per process when its samples come
 * from two or more processes, as the SVG and folded outputs root each
 * stack at its process (issue 16: merging them under "all" mixed, say,
 * nginx's and the app's `main`); merged otherwise. The compact page's
 * preview (crates/report/src/embed.rs) applies the same rule.
 */
export function defaultSplit(profile: Profile): SplitMode {
  if (!profile.sampleThread) return 'merge';
  return new Set(profile.threads.map((_, i) => processKey(profile, i))).size >= 2 ? 'process' : 'merge';
}

/**
 * Whether the profile's process ids are real: some thread's id differs
 * from its process id. perf script text without a pid field gives each
 * thread its own id as pid, so a process's threads would pose as
 * processes; such a profile is grouped by process name instead, which is
 * what the SVG's roots are (stackcollapse-perf.pl roots stacks at comm).
 */
export function pidsKnown(profile: Profile): boolean {
  return profile.threads.some((t) => t.pid !== t.tid);
}

/** The process group of thread `i` and its root's label. */
function processKey(profile: Profile, i: number, known = pidsKnown(profile)): string {
  const t = profile.threads[i];
  return known ? `${profile.processName(t.pid)} [pid ${t.pid}]` : profile.processName(t.pid);
}

/**
 * The function table every tree starts from (the profile's frames, then
 * "all", then one function per process or thread group when split) and the
 * group of each thread index. Shared by the merged and time-ordered trees
 * so both label and group roots alike.
 */
export function treeRoots(
  profile: Profile,
  split: SplitMode,
): { funcs: FuncTable; allFunc: number; groupOfThread: Int32Array; groupFunc: number[] } {
  const funcs: FuncTable = {
    name: profile.frameName.slice(),
    module: profile.frameModule.slice(),
    kind: profile.frameKind.slice(),
  };
  const addFunc = (name: string, kind: string): number => {
    funcs.name.push(name);
    funcs.module.push('');
    funcs.kind.push(kind);
    return funcs.name.length - 1;
  };
  const allFunc = addFunc('all', 'root');
  const groupOfThread = new Int32Array(Math.max(profile.threads.length, 1));
  const groupFunc: number[] = [];
  if (split !== 'merge' && profile.threads.length) {
    const byKey = new Map<string, number>();
    const known = pidsKnown(profile);
    profile.threads.forEach((t, i) => {
      // A process's label is its key: one root per process (per process
      // name when the pids are not known, see pidsKnown).
      const key = split === 'process' ? processKey(profile, i, known) : `${t.pid}/${t.tid}`;
      let g = byKey.get(key);
      if (g === undefined) {
        g = groupFunc.length;
        byKey.set(key, g);
        groupFunc.push(addFunc(split === 'process' ? key : `${t.comm || '?'} [${t.pid}/${t.tid}]`, split));
      }
      groupOfThread[i] = g;
    });
  }
  return { funcs, allFunc, groupOfThread, groupFunc };
}

/** 1 for each frame whose name the hide regex matches. */
export function hiddenFrames(profile: Profile, hide: RegExp | null | undefined): Uint8Array {
  const hidden = new Uint8Array(profile.frameCount);
  if (hide) {
    for (let f = 0; f < profile.frameCount; f++) {
      hide.lastIndex = 0;
      if (hide.test(profile.frameName[f])) hidden[f] = 1;
    }
  }
  return hidden;
}

/** 1 for each frame named `name` (none for null). */
export function framesNamed(profile: Profile, name: string | null): Uint8Array {
  const out = new Uint8Array(profile.frameCount);
  if (name !== null) for (let f = 0; f < profile.frameCount; f++) if (profile.frameName[f] === name) out[f] = 1;
  return out;
}

/** Builds the merged call tree of a profile under the given filters. */
export function buildTree(profile: Profile, opts: TreeOptions = {}): CallTree {
  const nNodes = profile.nodeCount;
  const split = opts.split ?? 'merge';

  const { funcs, allFunc, groupOfThread, groupFunc } = treeRoots(profile, split);
  const grouped = split !== 'merge' && profile.sampleThread !== null && groupFunc.length > 0;

  // 1. Aggregate weight per stack node (per group when split): one pass
  // over the samples. Keys are group * nNodes + node.
  const weight = new Float64Array(nNodes);
  // A few groups (the processes a page opens split by): one dense weight
  // column each, so the common case stays on typed arrays; many groups
  // (split by thread of a busy server): a map of the (group, node) pairs.
  const dense = grouped && groupFunc.length <= DENSE_GROUPS && profile.sampleNode !== null;
  const groupWeights = dense ? groupFunc.map(() => new Float64Array(nNodes)) : null;
  const groupWeight = grouped && !dense ? new Map<number, number>() : null;
  let sampleCount: number | null = null;
  const idle = opts.hideIdle ? profile.idleNodes() : null;
  if (profile.sampleNode) {
    const sn = profile.sampleNode;
    const sw = profile.sampleWeight;
    const st = profile.sampleTime;
    const sth = profile.sampleThread;
    const from = st && opts.fromMs != null ? opts.fromMs : -Infinity;
    const to = st && opts.toMs != null ? opts.toMs : Infinity;
    const threads = sth && opts.threads ? opts.threads : null;
    const mask = opts.sampleMask ?? null;
    let count = 0;
    for (let i = 0; i < sn.length; i++) {
      if (mask !== null && !mask[i]) continue;
      if (st !== null) {
        const t = st[i];
        if (t < from || t >= to) continue;
      }
      if (threads !== null && !threads.has((sth as Int32Array)[i])) continue;
      const node = sn[i];
      if (idle !== null && idle[node]) continue;
      const w = sw === null ? 1 : sw[i];
      if (groupWeights !== null) groupWeights[groupOfThread[(sth as Int32Array)[i]]][node] += w;
      else if (groupWeight !== null) {
        const key = groupOfThread[(sth as Int32Array)[i]] * nNodes + node;
        groupWeight.set(key, (groupWeight.get(key) ?? 0) + w);
      } else weight[node] += w;
      count++;
    }
    sampleCount = count;
  } else if (profile.counts) {
    weight.set(profile.counts);
    if (idle) for (let n = 0; n < nNodes; n++) if (idle[n]) weight[n] = 0;
  }

  // 2a. Fast path: without transforms the profile's prefix tree already is
  // the merged call tree; keep the nodes that carry weight, all typed arrays.
  const callersOf = opts.callers != null && opts.callers !== '' ? opts.callers : null;
  const untransformed = !opts.hide && !(opts.focus != null && opts.focus !== '') && !opts.invert && callersOf === null;
  if (untransformed && groupWeights !== null) {
    const tree = plainGrouped(profile, funcs, allFunc, groupFunc, groupWeights, opts.minShare ?? 0);
    tree.sampleCount = sampleCount;
    if (opts.leftHeavy) tree.orderChildren('weight');
    return tree;
  }
  const plain = !grouped && untransformed;
  if (plain) {
    const parentIn = profile.nodeParent;
    const sub = Float64Array.from(weight);
    for (let n = nNodes - 1; n >= 0; n--) if (parentIn[n] >= 0) sub[parentIn[n]] += sub[n];
    const tid = new Int32Array(nNodes);
    let rootW = 0;
    for (let n = 0; n < nNodes; n++) if (parentIn[n] < 0) rootW += sub[n];
    const minW = opts.minShare ? Math.max(opts.minShare * rootW, Number.MIN_VALUE) : Number.MIN_VALUE;
    let kept = 1;
    for (let n = 0; n < nNodes; n++) {
      const p = parentIn[n];
      // Roots and nodes whose parent is kept may be kept; the rest fold up.
      if (sub[n] >= minW && (p < 0 || tid[p] > 0)) tid[n] = kept++;
    }
    const tParent = new Int32Array(kept);
    const tFunc = new Int32Array(kept);
    const tSelf = new Float64Array(kept);
    tFunc[0] = allFunc;
    for (let n = 0; n < nNodes; n++) {
      const t = tid[n];
      const p = parentIn[n];
      if (t === 0) {
        // A dropped subtree (preview only) whose parent is kept: fold it in.
        if (sub[n] > 0 && p >= 0 && tid[p] > 0) tSelf[tid[p]] += sub[n];
        else if (sub[n] > 0 && p < 0) tSelf[0] += sub[n];
        continue;
      }
      tParent[t] = p >= 0 ? tid[p] : 0;
      tFunc[t] = profile.nodeFrame[n];
      tSelf[t] += weight[n];
    }
    const tree = new CallTree(funcs, tParent, tFunc, tSelf, kept < SMALL_TREE ? undefined : profileRanks(profile.frameName, funcs.name));
    tree.sampleCount = sampleCount;
    if (opts.leftHeavy) tree.orderChildren('weight');
    return tree;
  }

  // 2. Map each weighted stack into the tree.
  const b = new Builder();
  b.func[0] = allFunc;
  const hidden = hiddenFrames(profile, opts.hide);
  const focusName = callersOf ?? opts.focus;
  const focusing = focusName != null && focusName !== '';
  const focusFrames = framesNamed(profile, focusing ? focusName : null);
  const parent = profile.nodeParent;
  const frame = profile.nodeFrame;
  // Which profile nodes have the focused function on their path (parents
  // come before children): stacks without it are skipped unwalked.
  let through: Uint8Array | null = null;
  if (focusing) {
    through = new Uint8Array(nNodes);
    for (let n = 0; n < nNodes; n++) through[n] = focusFrames[frame[n]] | (parent[n] >= 0 ? through[parent[n]] : 0);
  }
  const groupRoots = groupFunc.map((f) => (grouped ? b.child(0, f) : 0));

  // Memoised prefix mapping: a node's tree node is its parent's tree node's
  // child, so each (group, profile node) is mapped at most once.
  const memoArr = !grouped || dense ? new Int32Array(nNodes * (dense ? groupFunc.length : 1)).fill(-1) : null;
  const memoMap = memoArr ? null : new Map<number, number>();
  const pending: number[] = [];
  const mapPrefix = (g: number, n: number): number => {
    const base = grouped ? g * nNodes : 0;
    const get = (k: number): number => (memoArr ? memoArr[base + k] : (memoMap as Map<number, number>).get(base + k) ?? -1);
    let m = n;
    while (m >= 0 && get(m) < 0) {
      pending.push(m);
      m = parent[m];
    }
    let t = m >= 0 ? get(m) : grouped ? groupRoots[g] : 0;
    while (pending.length) {
      const k = pending.pop() as number;
      if (!hidden[frame[k]]) t = b.child(t, frame[k]);
      if (memoArr) memoArr[base + k] = t;
      else (memoMap as Map<number, number>).set(base + k, t);
    }
    return t;
  };
  const path: number[] = [];
  const mapPath = (g: number, n: number): number => {
    if (through !== null && !through[n]) return -1;
    path.length = 0;
    for (let m = n; m >= 0; m = parent[m]) if (!hidden[frame[m]]) path.push(frame[m]);
    path.reverse(); // root to leaf
    let start = 0;
    if (focusing) {
      start = path.findIndex((f) => focusFrames[f] === 1);
      if (start < 0) return -1;
    }
    let t = grouped ? groupRoots[g] : 0;
    if (callersOf !== null) for (let i = start; i >= 0; i--) t = b.child(t, path[i]);
    else if (opts.invert) for (let i = path.length - 1; i >= start; i--) t = b.child(t, path[i]);
    else for (let i = start; i < path.length; i++) t = b.child(t, path[i]);
    return t;
  };
  const map = opts.invert || focusing ? mapPath : mapPrefix;
  let whole = 0;
  if (groupWeights !== null) {
    groupWeights.forEach((gw, g) => {
      for (let n = 0; n < nNodes; n++) {
        const w = gw[n];
        if (w === 0) continue;
        const t = map(g, n);
        whole += w;
        if (t >= 0) b.self[t] += w;
      }
    });
  } else if (groupWeight !== null) {
    for (const [key, w] of groupWeight) {
      const g = Math.floor(key / nNodes);
      const t = map(g, key - g * nNodes);
      whole += w;
      if (t >= 0) b.self[t] += w;
    }
  } else {
    for (let n = 0; n < nNodes; n++) {
      const w = weight[n];
      if (w === 0) continue;
      const t = map(0, n);
      whole += w;
      if (t >= 0) b.self[t] += w;
    }
  }
  const tree = new CallTree(funcs, ...b.columns(), profileRanks(profile.frameName, funcs.name));
  tree.sampleCount = sampleCount;
  // A callers tree is leaf-first too, but its leaf is the chosen function,
  // not each sample's own leaf: self weight reads as in a plain tree.
  tree.inverted = !!opts.invert && callersOf === null;
  if (focusing) tree.wholeTotal = whole;
  if (opts.leftHeavy) tree.orderChildren('weight');
  return tree;
}

/** Up to this many process or thread groups get dense weight columns. */
const DENSE_GROUPS = 8;

/**
 * The untransformed tree split into a few groups: each group's part of the
 * profile's prefix tree, kept where it carries weight (as the merged fast
 * path does), under one root per group. Typed arrays throughout.
 */
function plainGrouped(profile: Profile, funcs: FuncTable, allFunc: number, groupFunc: number[], weights: Float64Array[], minShare: number): CallTree {
  const nNodes = profile.nodeCount;
  const parentIn = profile.nodeParent;
  const G = groupFunc.length;
  const subs = weights.map((w) => {
    const sub = Float64Array.from(w);
    for (let n = nNodes - 1; n >= 0; n--) if (parentIn[n] >= 0) sub[parentIn[n]] += sub[n];
    return sub;
  });
  let rootW = 0;
  for (const sub of subs) for (let n = 0; n < nNodes; n++) if (parentIn[n] < 0) rootW += sub[n];
  const minW = minShare ? Math.max(minShare * rootW, Number.MIN_VALUE) : Number.MIN_VALUE;
  let kept = 1 + G;
  const tids = subs.map((sub) => {
    const tid = new Int32Array(nNodes);
    for (let n = 0; n < nNodes; n++) {
      const p = parentIn[n];
      if (sub[n] >= minW && (p < 0 || tid[p] > 0)) tid[n] = kept++;
    }
    return tid;
  });
  const tParent = new Int32Array(kept);
  const tFunc = new Int32Array(kept);
  const tSelf = new Float64Array(kept);
  tParent[0] = -1;
  tFunc[0] = allFunc;
  for (let g = 0; g < G; g++) {
    const root = 1 + g;
    tFunc[root] = groupFunc[g];
    const tid = tids[g];
    const sub = subs[g];
    const w = weights[g];
    for (let n = 0; n < nNodes; n++) {
      const t = tid[n];
      const p = parentIn[n];
      if (t === 0) {
        // A dropped subtree (preview only) whose parent is kept: fold it in.
        if (sub[n] > 0 && p >= 0 && tid[p] > 0) tSelf[tid[p]] += sub[n];
        else if (sub[n] > 0 && p < 0) tSelf[root] += sub[n];
        continue;
      }
      tParent[t] = p >= 0 ? tid[p] : root;
      tFunc[t] = profile.nodeFrame[n];
      tSelf[t] += w[n];
    }
  }
  return new CallTree(funcs, tParent, tFunc, tSelf, kept < SMALL_TREE ? undefined : profileRanks(profile.frameName, funcs.name));
}

/** Per-function self and total weight; total counts recursion once. */
export interface FuncStats {
  self: Float64Array;
  total: Float64Array;
}

/** The root or a synthetic process/thread group frame (not a function). */
function isGroupOrRoot(tree: CallTree, n: number): boolean {
  if (n === 0) return true;
  const k = tree.funcs.kind[tree.func[n]];
  return k === 'root' || k === 'process' || k === 'thread';
}

/**
 * Self and total weight per function over the subtree under `root`. In an
 * inverted tree a function's self weight is its weight as a leaf (right
 * under the root or a group), as `perf report --no-children` counts it.
 */
export function funcStats(tree: CallTree, root = 0): FuncStats {
  const nf = tree.funcs.name.length;
  const self = new Float64Array(nf);
  const total = new Float64Array(nf);
  const onStack = new Int32Array(nf);
  // Iterative DFS with exit markers (~node) so recursion is counted once.
  const stack = [root];
  while (stack.length) {
    const v = stack.pop() as number;
    if (v < 0) {
      onStack[tree.func[~v]]--;
      continue;
    }
    const f = tree.func[v];
    if (!tree.inverted) self[f] += tree.self[v];
    else if (v !== 0 && isGroupOrRoot(tree, tree.parent[v]) && !isGroupOrRoot(tree, v)) self[f] += tree.total[v];
    if (onStack[f] === 0) total[f] += tree.total[v];
    onStack[f]++;
    stack.push(~v);
    for (let k = tree.childStart[v]; k < tree.childStart[v + 1]; k++) stack.push(tree.childList[k]);
  }
  return { self, total };
}

/** Weight of matching frames without double-counting nested matches. */
export interface MatchShare {
  /** Weight under outermost matches in the whole tree. */
  all: number;
  /** Weight under outermost matches within the subtree of the zoom root. */
  zoom: number;
  /** Number of matching nodes (drawn highlighted). */
  nodes: number;
}

/**
 * Sums the weight under outermost matching nodes: a sample whose stack
 * has several matching frames counts once. If the zoom root or one of its
 * ancestors matches, the whole zoomed view matches.
 */
export function matchShare(tree: CallTree, matches: Uint8Array, zoom: number): MatchShare {
  const under = new Uint8Array(tree.n); // node or an ancestor matches
  let all = 0;
  let nodes = 0;
  for (let i = 0; i < tree.n; i++) {
    const m = matches[tree.func[i]];
    const p = i === 0 ? 0 : under[tree.parent[i]];
    if (m) nodes++;
    if (m && !p) all += tree.total[i];
    under[i] = m | p;
  }
  let zoomW = 0;
  if (under[zoom]) zoomW = tree.total[zoom];
  else {
    const stack = [zoom];
    while (stack.length) {
      const v = stack.pop() as number;
      if (matches[tree.func[v]]) {
        zoomW += tree.total[v];
        continue;
      }
      for (let k = tree.childStart[v]; k < tree.childStart[v + 1]; k++) stack.push(tree.childList[k]);
    }
  }
  return { all, zoom: zoomW, nodes };
}
