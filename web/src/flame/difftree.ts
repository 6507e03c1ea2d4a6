/**
 * Differential call tree: two trees merged by frame path (name + module).
 * Widths follow AFTER; stacks that vanished in AFTER keep their BEFORE
 * width so they are still drawn (difffolded.pl's blind spot).
 */
import { CallTree, FuncTable } from './tree';

/** How before and after are compared. */
export type DiffMode = 'absolute' | 'normalized';

/** A merged tree plus both sides' weights per node. */
export interface DiffTree {
  tree: CallTree;
  mode: DiffMode;
  /** Per node; before is scaled to after's total in normalized mode. */
  beforeTotal: Float64Array;
  afterTotal: Float64Array;
  beforeSelf: Float64Array;
  afterSelf: Float64Array;
  /** Raw (unscaled) sums of each side. */
  beforeSum: number;
  afterSum: number;
  /** after - before per node (shares of each total in normalized mode, else weight). */
  delta: Float64Array;
  /** Largest |delta| below the root, for colour intensity. */
  maxAbsDelta: number;
}

/** Merges `before` and `after` by frame path. */
export function diffTrees(before: CallTree, after: CallTree, mode: DiffMode): DiffTree {
  const beforeSum = before.total[0];
  const afterSum = after.total[0];
  const scale = mode === 'normalized' && beforeSum > 0 ? afterSum / beforeSum : 1;

  const funcs: FuncTable = { name: [], module: [], kind: [] };
  const funcIds = new Map<string, number>();
  // Each side's function id maps to a merged id once; the string key is
  // built only the first time a function is met.
  const memo = new Map<CallTree, Int32Array>([
    [before, new Int32Array(before.funcs.name.length).fill(-1)],
    [after, new Int32Array(after.funcs.name.length).fill(-1)],
  ]);
  const funcOf = (t: CallTree, node: number): number => {
    const f = t.func[node];
    const m = memo.get(t) as Int32Array;
    if (m[f] >= 0) return m[f];
    const key = `${t.funcs.name[f]}\u0000${t.funcs.module[f]}`;
    let id = funcIds.get(key);
    if (id === undefined) {
      id = funcs.name.length;
      funcIds.set(key, id);
      funcs.name.push(t.funcs.name[f]);
      funcs.module.push(t.funcs.module[f]);
      funcs.kind.push(t.funcs.kind[f]);
    }
    m[f] = id;
    return id;
  };

  const parent: number[] = [0];
  const func: number[] = [funcOf(after, 0)];
  const layoutSelf: number[] = [0];
  const bSelf: number[] = [before.self[0] * scale];
  const aSelf: number[] = [after.self[0]];
  const bNode: number[] = [0];
  const aNode: number[] = [0];

  // Breadth-first merge; parents always get lower ids than children.
  for (let i = 0; i < parent.length; i++) {
    const kids = new Map<number, [number, number]>();
    const bn = bNode[i];
    const an = aNode[i];
    if (bn >= 0) {
      for (let k = before.childStart[bn]; k < before.childStart[bn + 1]; k++) {
        const c = before.childList[k];
        kids.set(funcOf(before, c), [c, -1]);
      }
    }
    if (an >= 0) {
      for (let k = after.childStart[an]; k < after.childStart[an + 1]; k++) {
        const c = after.childList[k];
        const f = funcOf(after, c);
        const e = kids.get(f);
        if (e) e[1] = c;
        else kids.set(f, [-1, c]);
      }
    }
    for (const [f, [bc, ac]] of kids) {
      parent.push(i);
      func.push(f);
      bNode.push(bc);
      aNode.push(ac);
      const bs = bc >= 0 ? before.self[bc] * scale : 0;
      const as = ac >= 0 ? after.self[ac] : 0;
      bSelf.push(bs);
      aSelf.push(as);
      // Present in AFTER: drawn at its after width; vanished: at before width.
      layoutSelf.push(ac >= 0 && after.total[ac] > 0 ? as : bs);
    }
  }
  const n = parent.length;
  const tree = new CallTree(funcs, Int32Array.from(parent), Int32Array.from(func), Float64Array.from(layoutSelf));
  const beforeSelf = Float64Array.from(bSelf);
  const afterSelf = Float64Array.from(aSelf);
  const beforeTotal = Float64Array.from(bSelf);
  const afterTotal = Float64Array.from(aSelf);
  for (let i = n - 1; i > 0; i--) {
    beforeTotal[parent[i]] += beforeTotal[i];
    afterTotal[parent[i]] += afterTotal[i];
  }
  const delta = new Float64Array(n);
  let maxAbsDelta = 0;
  for (let i = 0; i < n; i++) {
    let d = mode === 'normalized' && afterSum > 0 ? (afterTotal[i] - beforeTotal[i]) / afterSum : afterTotal[i] - beforeTotal[i];
    // Scaling leaves rounding dust; it must not colour unchanged frames.
    if (Math.abs(d) < (mode === 'normalized' ? 1e-9 : 1e-6)) d = 0;
    delta[i] = d;
    if (i > 0 && Math.abs(delta[i]) > maxAbsDelta) maxAbsDelta = Math.abs(delta[i]);
  }
  return { tree, mode, beforeTotal, afterTotal, beforeSelf, afterSelf, beforeSum, afterSum, delta, maxAbsDelta };
}
