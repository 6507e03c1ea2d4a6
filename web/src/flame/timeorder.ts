/**
 * The time-ordered call tree (speedscope's "Time Order"): samples left to
 * right in the order they were taken. Consecutive samples that share a
 * stack prefix share its frames; a frame that ends and comes back later is
 * a new box, so the graph shows phases, not totals. Only identical
 * neighbours merge, never stacks far apart in time.
 */
import { Profile } from './profile';
import { fmtCount } from '../common/format';
import { buildTree, CallTree, framesNamed, hiddenFrames, TreeOptions, treeRoots } from './tree';

/**
 * Most boxes a time-ordered tree may have (about 45 bytes each in the
 * tree's columns). Stacks that change at every sample (many threads
 * interleaved, or a long capture) need one box per frame per sample; past
 * this the page says so and asks for a narrower range or one thread.
 */
export const MAX_TIME_ORDER_NODES = 2_000_000;

/** The time-ordered tree would be too large to draw; the message says what to narrow. */
export class TimeOrderTooLarge extends Error {}

/** Why a profile cannot be shown in time order, or null when it can. */
export function timeOrderUnavailable(profile: { sampleTime: Float64Array | null; sampleNode: Int32Array | null }): string | null {
  if (!profile.sampleNode) return 'this profile has only totals per stack (no individual samples), so there is no time order';
  if (!profile.sampleTime) return 'this profile has no sample timestamps (folded or aggregated input), so there is no time order';
  return null;
}

/** Sample indices sorted by time (stable: equal times keep input order). */
function timeOrder(times: Float64Array): Int32Array {
  const n = times.length;
  const idx = new Int32Array(n);
  let sorted = true;
  for (let i = 0; i < n; i++) {
    idx[i] = i;
    if (i > 0 && times[i] < times[i - 1]) sorted = false;
  }
  if (!sorted) idx.sort((a, b) => times[a] - times[b] || a - b);
  return idx;
}

/**
 * The time order of the samples in view draws at this resolution when the
 * exact tree would need more than MAX_TIME_ORDER_NODES boxes: a box lighter
 * than 1/8192 of the view (a quarter pixel at 2048 px) is folded into its
 * caller, in place, so what shows is every box wide enough to see, and at
 * most 8192 boxes per row. Coarser steps follow only if that is still too
 * many (a view of few samples, where 1/8192 is less than one sample).
 */
export const TIME_ORDER_RESOLUTION = 8192;
const COARSER = [TIME_ORDER_RESOLUTION, 2048, 512, 128];

/**
 * Builds the time-ordered tree of a profile's samples under the same
 * filters as buildTree (time range, threads, idle, hide, focus, invert,
 * split). Throws when the profile has no sample times: callers check
 * timeOrderUnavailable first, so the page can say why the mode is off.
 * When the exact tree would exceed `maxNodes` boxes (stacks that change
 * at almost every sample: many threads interleaved over a long capture),
 * it is built at TIME_ORDER_RESOLUTION (or coarser) instead, and
 * `tree.foldedBelow` says so; only if even 1/128 of the view is too fine
 * does it throw TimeOrderTooLarge.
 */
export function buildTimeOrderTree(profile: Profile, opts: TreeOptions = {}, maxNodes = MAX_TIME_ORDER_NODES): CallTree {
  let last: unknown = null;
  for (const r of [0, ...COARSER]) {
    try {
      return build(profile, opts, maxNodes, r);
    } catch (e) {
      if (!(e instanceof TimeOrderTooLarge)) throw e;
      last = e;
    }
  }
  throw last;
}

/** One process or thread group's boxes (local id 0: the group's root), in the order they open. */
class Lane {
  n = 1;
  parent = new Int32Array(1024);
  func = new Int32Array(1024);
  /** Weight of the samples whose stack ends in the box (its own, exact). */
  self = new Float64Array(1024);
  /** Weight of the boxes folded into the box (drawn as its own time). */
  folded = new Float64Array(1024);
  /** The lane's weight before the box opened: its place in time order. */
  openAt = new Float64Array(1024);
  /** Its samples: the lane's samples at time-order positions from .. to (exclusive). */
  fromK = new Int32Array(1024);
  toK = new Int32Array(1024);
  /** Weight of the lane's samples so far. */
  weight = 0;
  /** The open stack: boxes and their frames, root first. */
  on: number[] = [];
  of: number[] = [];
  lastNode = -1;
  lastLeaf = -1;
  root = -1;

  add(p: number, f: number, k: number): number {
    if (this.n === this.parent.length) {
      const grow = <T extends Int32Array | Float64Array>(a: T, b: T): T => {
        b.set(a);
        return b;
      };
      const cap = this.n * 2;
      this.parent = grow(this.parent, new Int32Array(cap));
      this.func = grow(this.func, new Int32Array(cap));
      this.self = grow(this.self, new Float64Array(cap));
      this.folded = grow(this.folded, new Float64Array(cap));
      this.openAt = grow(this.openAt, new Float64Array(cap));
      this.fromK = grow(this.fromK, new Int32Array(cap));
      this.toK = grow(this.toK, new Int32Array(cap));
    }
    const c = this.n++;
    this.parent[c] = p;
    this.func[c] = f;
    this.self[c] = 0;
    this.folded[c] = 0;
    this.openAt[c] = this.weight;
    this.fromK[c] = k;
    return c;
  }

  /**
   * Closes the open boxes from depth `d` on, before time-order position
   * `k`. Boxes lighter than `minW` fold into their caller: a lane's boxes
   * opened after a box that is still open are all inside it, so dropping
   * it truncates the lane there. Returns the boxes dropped.
   */
  close(d: number, minW: number, k: number): number {
    let dropped = 0;
    for (let j = d; j < this.on.length; j++) this.toK[this.on[j]] = k;
    if (minW > 0) {
      for (let j = d; j < this.on.length; j++) {
        const b = this.on[j];
        const w = this.weight - this.openAt[b];
        if (w < minW) {
          this.folded[this.parent[b]] += w;
          dropped = this.n - b;
          this.n = b;
          break;
        }
      }
    }
    this.on.length = d;
    this.of.length = d;
    return dropped;
  }
}

/** The time-ordered tree; `resolution` N > 0 folds boxes lighter than 1/N of the view. */
function build(profile: Profile, opts: TreeOptions, maxNodes: number, resolution: number): CallTree {
  const why = timeOrderUnavailable(profile);
  if (why) throw new Error(why);
  const sn = profile.sampleNode as Int32Array;
  const st = profile.sampleTime as Float64Array;
  const sw = profile.sampleWeight;
  const sth = profile.sampleThread;
  const split = opts.split ?? 'merge';
  const { funcs, allFunc, groupOfThread, groupFunc } = treeRoots(profile, split);
  const grouped = split !== 'merge' && sth !== null && groupFunc.length > 0;

  const hidden = hiddenFrames(profile, opts.hide);
  const callersOf = opts.callers != null && opts.callers !== '' ? opts.callers : null;
  const focusName = callersOf ?? opts.focus ?? null;
  const focusFrames = framesNamed(profile, focusName || null);
  const idle = opts.hideIdle ? profile.idleNodes() : null;
  const from = opts.fromMs != null ? opts.fromMs : -Infinity;
  const to = opts.toMs != null ? opts.toMs : Infinity;
  const threads = sth && opts.threads ? opts.threads : null;
  const keep = (i: number): boolean => {
    const t = st[i];
    if (t < from || t >= to) return false;
    if (threads !== null && !threads.has((sth as Int32Array)[i])) return false;
    return idle === null || !idle[sn[i]];
  };

  // At a resolution, the lightest box kept is a share of the weight drawn:
  // the samples in view through the focused function (if any).
  let minW = 0;
  if (resolution > 0) {
    let through: Uint8Array | null = null;
    if (focusName) {
      through = new Uint8Array(profile.nodeCount);
      for (let m = 0; m < profile.nodeCount; m++) {
        const f = profile.nodeFrame[m];
        const q = profile.nodeParent[m];
        through[m] = (focusFrames[f] && !hidden[f] ? 1 : 0) | (q >= 0 ? through[q] : 0);
      }
    }
    let drawn = 0;
    for (let i = 0; i < sn.length; i++) if (keep(i) && (through === null || through[sn[i]])) drawn += sw === null ? 1 : sw[i];
    minW = drawn / resolution;
  }

  const nGroups = grouped ? groupFunc.length : 1;
  const lanes: Lane[] = [];
  for (let g = 0; g < nGroups; g++) lanes.push(new Lane());
  // Lanes in the order their first sample comes: the root's children.
  const laneOrder: number[] = [];
  let boxes = 0;
  let folded = 0;
  const tooLarge = (): TimeOrderTooLarge =>
    new TimeOrderTooLarge(
      `time order of the samples in view needs more than ${fmtCount(maxNodes)} boxes (stacks change at almost every sample): pick one thread or a shorter time range`,
    );

  const path: number[] = [];
  const order = timeOrder(st);
  let count = 0;
  let whole = 0;
  for (let k = 0; k < order.length; k++) {
    const i = order[k];
    if (!keep(i)) continue;
    const node = sn[i];
    const w = sw === null ? 1 : sw[i];
    count++;
    whole += w;
    const g = grouped ? groupOfThread[(sth as Int32Array)[i]] : 0;
    const lane = lanes[g];
    if (lane.lastNode === node && lane.lastLeaf >= 0) {
      lane.self[lane.lastLeaf] += w;
      lane.weight += w;
      continue;
    }
    // The sample's frames, root to leaf, after hide/focus/invert/callers.
    path.length = 0;
    for (let m = node; m >= 0; m = profile.nodeParent[m]) {
      const f = profile.nodeFrame[m];
      if (!hidden[f]) path.push(f);
    }
    path.reverse();
    let start = 0;
    if (focusName) {
      start = path.findIndex((f) => focusFrames[f] === 1);
      if (start < 0) {
        // Not through the focused function: the open stack ends here.
        const dropped = lane.close(0, minW, k);
        boxes -= dropped;
        folded += dropped;
        lane.lastNode = -1;
        lane.lastLeaf = -1;
        continue;
      }
    }
    // frames[j] = path[first + j * step], `len` of them.
    let first = start;
    let step = 1;
    let len = path.length - start;
    if (callersOf !== null) {
      first = start;
      step = -1;
      len = start + 1;
    } else if (opts.invert) {
      first = path.length - 1;
      step = -1;
    }
    if (lane.root < 0) {
      lane.root = 0;
      laneOrder.push(g);
    }
    const of = lane.of;
    let d = 0;
    while (d < len && d < of.length && of[d] === path[first + d * step]) d++;
    const dropped = lane.close(d, minW, k);
    boxes -= dropped;
    folded += dropped;
    let cur = d > 0 ? lane.on[d - 1] : 0;
    for (let j = d; j < len; j++) {
      if (++boxes >= maxNodes) throw tooLarge();
      const f = path[first + j * step];
      cur = lane.add(cur, f, k);
      lane.on.push(cur);
      of.push(f);
    }
    lane.self[cur] += w;
    lane.weight += w;
    lane.lastNode = node;
    lane.lastLeaf = cur;
  }
  for (const lane of lanes) folded += lane.close(0, minW, order.length);

  // One tree: the root, the group roots (when split) in the order they
  // first appear, then each lane's boxes; a box's place is its lane's
  // offset plus the lane's weight when it opened.
  const head = grouped ? 1 + laneOrder.length : 1;
  let n = head;
  const start = new Int32Array(nGroups);
  for (const g of laneOrder) {
    start[g] = n;
    n += lanes[g].n - 1;
  }
  const parent = new Int32Array(n);
  const func = new Int32Array(n);
  const self = new Float64Array(n);
  const own = new Float64Array(n);
  const x = new Float64Array(n);
  // Each node's lane and sample span, for exactAt (the root: every lane).
  const nodeLane = new Int32Array(n).fill(-1);
  const fromK = new Int32Array(n);
  const toK = new Int32Array(n).fill(order.length);
  parent[0] = -1;
  func[0] = allFunc;
  let offset = 0;
  laneOrder.forEach((g, r) => {
    const lane = lanes[g];
    const base = grouped ? 1 + r : 0;
    if (grouped) {
      parent[base] = 0;
      func[base] = groupFunc[g];
      x[base] = offset;
      nodeLane[base] = g;
    }
    self[base] += lane.self[0] + lane.folded[0];
    own[base] += lane.self[0];
    for (let b = 1; b < lane.n; b++) {
      const id = start[g] + b - 1;
      const q = lane.parent[b];
      parent[id] = q === 0 ? base : start[g] + q - 1;
      func[id] = lane.func[b];
      self[id] = lane.self[b] + lane.folded[b];
      own[id] = lane.self[b];
      x[id] = offset + lane.openAt[b];
      nodeLane[id] = g;
      fromK[id] = lane.fromK[b];
      toK[id] = lane.toK[b];
    }
    offset += lane.weight;
  });
  // Equal ranks for every function: the tree's counting sort then keeps
  // each child list in node order, which is time order.
  const tree = new CallTree(funcs, parent, func, self, new Int32Array(funcs.name.length));
  // Boxes sit where they ran: with boxes folded into their callers, a
  // caller's own time can fall between two of its callees.
  tree.x.set(x);
  tree.order = 'creation';
  tree.sampleCount = count;
  tree.inverted = !!opts.invert && callersOf === null;
  if (focusName) tree.wholeTotal = whole;
  if (resolution > 0) tree.foldedBelow = { minWeight: minW, boxes: folded, resolution };
  if (folded > 0) {
    // Drawn folded, counted exactly: a box's self is its own samples only
    // (what was folded into it is the gap between its callees), and
    // exactAt merges the samples under any node into an exact tree.
    tree.self.set(own);
    const laneOf = (i: number): number => (grouped ? groupOfThread[(sth as Int32Array)[i]] : 0);
    tree.exactAt = (node: number) => {
      let mask: Uint8Array | null = null;
      if (node !== 0) {
        const g = nodeLane[node];
        mask = new Uint8Array(sn.length);
        for (let k = fromK[node]; k < toK[node]; k++) {
          const i = order[k];
          if (laneOf(i) === g) mask[i] = 1;
        }
      }
      const merged = buildTree(profile, { ...opts, leftHeavy: false, sampleMask: mask });
      // The node's path, function by function, in the merged tree: every
      // sample under the node has it as its prefix, so it is there.
      let m = 0;
      for (const p of tree.path(node)) {
        const f = tree.func[p];
        let next = -1;
        for (let c = merged.childStart[m]; c < merged.childStart[m + 1]; c++) {
          if (merged.func[merged.childList[c]] === f) {
            next = merged.childList[c];
            break;
          }
        }
        if (next < 0) throw new Error(`time order: ${tree.name(p)} is not in the merged tree of its own samples`);
        m = next;
      }
      return { tree: merged, node: m };
    };
  }
  return tree;
}
