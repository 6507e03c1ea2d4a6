/**
 * The time-ordered call tree (speedscope's "Time Order"): samples left to
 * right in the order they were taken. Consecutive samples that share a
 * stack prefix share its frames; a frame that ends and comes back later is
 * a new box, so the graph shows phases, not totals. Only identical
 * neighbours merge, never stacks far apart in time.
 */
import { Profile } from './profile';
import { fmtCount } from '../common/format';
import { CallTree, framesNamed, hiddenFrames, TreeOptions, treeRoots } from './tree';

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
 * Builds the time-ordered tree of a profile's samples under the same
 * filters as buildTree (time range, threads, idle, hide, focus, invert,
 * split). Throws when the profile has no sample times: callers check
 * timeOrderUnavailable first, so the page can say why the mode is off.
 */
export function buildTimeOrderTree(profile: Profile, opts: TreeOptions = {}, maxNodes = MAX_TIME_ORDER_NODES): CallTree {
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

  // Nodes are appended in the order they open, so ids follow time.
  let cap = Math.min(1 << 16, maxNodes);
  let parent = new Int32Array(cap);
  let func = new Int32Array(cap);
  let self = new Float64Array(cap);
  let n = 1;
  parent[0] = -1;
  func[0] = allFunc;
  const newNode = (p: number, f: number): number => {
    if (n === cap) {
      if (cap >= maxNodes) {
        throw new TimeOrderTooLarge(
          `time order of the samples in view needs more than ${fmtCount(maxNodes)} boxes (stacks change at almost every sample): pick one thread or a shorter time range`,
        );
      }
      cap = Math.min(cap * 2, maxNodes);
      const grow = <T extends Int32Array | Float64Array>(a: T, b: T): T => {
        b.set(a);
        return b;
      };
      parent = grow(parent, new Int32Array(cap));
      func = grow(func, new Int32Array(cap));
      self = grow(self, new Float64Array(cap));
    }
    parent[n] = p;
    func[n] = f;
    return n++;
  };
  // Per group: the open stack (tree nodes and their frames) and the
  // profile node of the last sample, for the common "same stack" case.
  const nGroups = grouped ? groupFunc.length : 1;
  const openNodes: number[][] = [];
  const openFrames: number[][] = [];
  const lastNode = new Int32Array(nGroups).fill(-1);
  const lastLeaf = new Int32Array(nGroups).fill(-1);
  for (let g = 0; g < nGroups; g++) {
    openNodes.push([]);
    openFrames.push([]);
  }
  const groupRoot = new Int32Array(nGroups).fill(-1);

  const from = opts.fromMs != null ? opts.fromMs : -Infinity;
  const to = opts.toMs != null ? opts.toMs : Infinity;
  const threads = sth && opts.threads ? opts.threads : null;
  const path: number[] = [];
  const order = timeOrder(st);
  let count = 0;
  let whole = 0;
  for (let k = 0; k < order.length; k++) {
    const i = order[k];
    const t = st[i];
    if (t < from || t >= to) continue;
    if (threads !== null && !threads.has((sth as Int32Array)[i])) continue;
    const node = sn[i];
    if (idle !== null && idle[node]) continue;
    const w = sw === null ? 1 : sw[i];
    count++;
    whole += w;
    const g = grouped ? groupOfThread[(sth as Int32Array)[i]] : 0;
    if (lastNode[g] === node && lastLeaf[g] >= 0) {
      self[lastLeaf[g]] += w;
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
        lastNode[g] = -1;
        lastLeaf[g] = -1;
        openNodes[g].length = 0;
        openFrames[g].length = 0;
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
    if (grouped && groupRoot[g] < 0) groupRoot[g] = newNode(0, groupFunc[g]);
    const base = grouped ? groupRoot[g] : 0;
    const on = openNodes[g];
    const of = openFrames[g];
    let d = 0;
    while (d < len && d < of.length && of[d] === path[first + d * step]) d++;
    on.length = d;
    of.length = d;
    let cur = d > 0 ? on[d - 1] : base;
    for (let j = d; j < len; j++) {
      const f = path[first + j * step];
      cur = newNode(cur, f);
      on.push(cur);
      of.push(f);
    }
    self[cur] += w;
    lastNode[g] = node;
    lastLeaf[g] = cur;
  }
  // Equal ranks for every function: the tree's counting sort then keeps
  // each child list in node order, which is time order.
  const tree = new CallTree(funcs, parent.slice(0, n), func.slice(0, n), self.slice(0, n), new Int32Array(funcs.name.length));
  tree.order = 'creation';
  tree.sampleCount = count;
  tree.inverted = !!opts.invert && callersOf === null;
  if (focusName) tree.wholeTotal = whole;
  return tree;
}
