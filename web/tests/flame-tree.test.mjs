// Unit tests of the call-tree code (web/src/flame/tree.ts, difftree.ts)
// in Node: the typed-array fast path and the hashing builder agree, the
// preview tree keeps exact widths, matched shares never double-count, and
// invert/focus/diff keep their totals. Bundled on the fly with esbuild.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { build } from 'esbuild';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { WEB } from './helpers/browser.mjs';
import { syntheticProfile, weightWhere, forEachStack, IDLE } from './helpers/profiles.mjs';

const dir = mkdtempSync(join(tmpdir(), 'keisoku-tree-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const entry = join(dir, 'entry.ts');
writeFileSync(entry, `export * from '${join(WEB, 'src/flame/tree.ts')}';\nexport * from '${join(WEB, 'src/flame/difftree.ts')}';\nexport { Profile, setIdleFrames } from '${join(WEB, 'src/flame/profile.ts')}';\n`);
await build({ entryPoints: [entry], bundle: true, format: 'esm', platform: 'neutral', outfile: join(dir, 'tree.mjs'), logLevel: 'error' });
const { buildTree, matchShare, funcStats, diffTrees, Profile, setIdleFrames, defaultSplit, pidsKnown } = await import(pathToFileURL(join(dir, 'tree.mjs')).href);

// Outside a page there is no meta element: give the tree code the idle list
// the synthetic profiles use.
setIdleFrames(IDLE);

const data = syntheticProfile({ samples: 8000, frames: 300, seconds: 3, threads: 3, seed: 3 });
const profile = Profile.from(data);

/** Weight per root-to-node name path of a tree. */
function pathWeights(tree) {
  const out = new Map();
  const names = new Array(tree.n);
  for (let i = 1; i < tree.n; i++) {
    names[i] = (tree.parent[i] === 0 ? '' : names[tree.parent[i]] + ';') + tree.name(i);
    out.set(names[i], (out.get(names[i]) ?? 0) + tree.total[i]);
  }
  return out;
}

test('fast path and hashing builder build the same tree', () => {
  const fast = buildTree(profile, {});
  const slow = buildTree(profile, { hide: /^no such frame$/ });
  assert.equal(fast.total[0], 8000);
  assert.deepEqual(pathWeights(fast), pathWeights(slow));
  // Children sorted by name, x offsets contiguous.
  for (let i = 0; i < fast.n; i++) {
    let cur = fast.x[i];
    let prev = '';
    for (let k = fast.childStart[i]; k < fast.childStart[i + 1]; k++) {
      const c = fast.childList[k];
      assert.ok(prev <= fast.name(c));
      prev = fast.name(c);
      assert.equal(fast.x[c], cur);
      cur += fast.total[c];
    }
    assert.ok(cur <= fast.x[i] + fast.total[i] + 1e-9);
  }
});

test('preview tree keeps exact totals of the nodes it keeps', () => {
  const full = buildTree(profile, {});
  const pre = buildTree(profile, { minShare: 0.01 });
  assert.ok(pre.n < full.n / 5, `${pre.n} vs ${full.n}`);
  assert.equal(pre.total[0], full.total[0]);
  const fw = pathWeights(full);
  for (const [path, w] of pathWeights(pre)) assert.equal(w, fw.get(path), path);
});

test('matched share counts nested matches once, in the whole tree and in a zoomed subtree', () => {
  const tree = buildTree(profile, {});
  const re = /malloc|memcpy|_hash/;
  const m = new Uint8Array(tree.funcs.name.length);
  tree.funcs.name.forEach((n, i) => (m[i] = re.test(n) ? 1 : 0));
  const s = matchShare(tree, m, 0);
  assert.equal(s.all, weightWhere(data, { match: re }));
  assert.equal(s.zoom, s.all);
  const libc = tree.childList[tree.childStart[0]];
  let main = -1;
  for (let k = tree.childStart[libc]; k < tree.childStart[libc + 1]; k++) if (tree.name(tree.childList[k]) === 'main') main = tree.childList[k];
  assert.ok(main > 0);
  const z = matchShare(tree, m, main);
  assert.equal(z.zoom, weightWhere(data, { prefix: ['__libc_start_main', 'main'], match: re }));
});

test('function totals count recursion once; self sums to the total', () => {
  const tree = buildTree(profile, {});
  const st = funcStats(tree, 0);
  const total = st.self.reduce((a, b) => a + b, 0);
  assert.equal(total, 8000);
  const idx = tree.funcs.name.indexOf('malloc');
  assert.equal(st.total[idx], weightWhere(data, { match: /^malloc$/ }));
});

test('time range, threads, idle, invert, focus and split keep the right totals', () => {
  assert.equal(buildTree(profile, { fromMs: 500, toMs: 1500 }).total[0], weightWhere(data, { from: 500, to: 1500 }));
  assert.equal(buildTree(profile, { threads: new Set([0, 2]) }).total[0], weightWhere(data, { threads: [0, 2] }));
  assert.equal(buildTree(profile, { hideIdle: true }).total[0], weightWhere(data, { idle: false }));
  const inv = buildTree(profile, { invert: true });
  let leafMemcpy = 0;
  forEachStack(data, (names, w) => names.at(-1) === 'memcpy' && (leafMemcpy += w));
  const top = new Map();
  for (let k = inv.childStart[0]; k < inv.childStart[1]; k++) top.set(inv.name(inv.childList[k]), inv.total[inv.childList[k]]);
  assert.equal(top.get('memcpy'), leafMemcpy);
  const foc = buildTree(profile, { focus: 'memcpy' });
  assert.equal(foc.total[0], weightWhere(data, { match: /^memcpy$/ }));
  const split = buildTree(profile, { split: 'process' });
  const groups = [];
  for (let k = split.childStart[0]; k < split.childStart[1]; k++) groups.push([split.name(split.childList[k]), split.total[split.childList[k]]]);
  assert.deepEqual(groups.map((g) => g[0]).sort(), ['server [pid 4242]', 'worker [pid 5151]']);
  assert.equal(groups.find((g) => g[0] === 'worker [pid 5151]')[1], weightWhere(data, { threads: [2] }));
});

test('a process is named by the comm with most of its samples (issue 16: not the name before exec)', () => {
  // pid 7 ran as "mixed.sh" for one sample, then exec'd node for three.
  const p = Profile.from({
    version: 1, title: 't', unit: 'samples', kinds: ['kernel', 'native', 'jit', 'interpreted', 'inlined', 'unknown'],
    frames: { name: ['main', 'work'], module: ['', ''], kind: [1, 1] },
    nodes: { parent: [-1, 0], frame: [0, 1] },
    threads: [{ pid: 7, tid: 7, comm: 'mixed.sh' }, { pid: 7, tid: 7, comm: 'node' }, { pid: 7, tid: 8, comm: 'node' }],
    samples: { node: [1, 1, 1, 1], weight: null, time_ms: [0, 1, 2, 3], thread: [0, 1, 1, 2] },
    counts: null, start_unix_ns: null, duration_ms: 4,
  });
  assert.equal(p.processName(7), 'node');
  const split = buildTree(p, { split: 'process' });
  assert.equal(split.name(split.childList[split.childStart[0]]), 'node [pid 7]');
});

test('without pids (default perf script) processes are grouped by name, never one "process 0" nor one per thread (issue 16)', () => {
  // What the reader gives for `comm tid time:` lines: each thread its own id as pid.
  const p = Profile.from({
    version: 1, title: 't', unit: 'samples', kinds: ['kernel', 'native', 'jit', 'interpreted', 'inlined', 'unknown'],
    frames: { name: ['main', 'work', 'ngx_worker'], module: ['', '', ''], kind: [1, 1, 1] },
    nodes: { parent: [-1, 0, -1], frame: [0, 1, 2] },
    threads: [{ pid: 4101, tid: 4101, comm: 'node' }, { pid: 4102, tid: 4102, comm: 'node' }, { pid: 77, tid: 77, comm: 'nginx' }],
    samples: { node: [1, 1, 1, 2], weight: null, time_ms: [0, 1, 2, 3], thread: [0, 1, 1, 2] },
    counts: null, start_unix_ns: null, duration_ms: 4,
  });
  assert.equal(pidsKnown(p), false);
  assert.equal(defaultSplit(p), 'process', 'two commands: one root each');
  const t = buildTree(p, { split: 'process' });
  const roots = [];
  for (let k = t.childStart[0]; k < t.childStart[1]; k++) roots.push([t.name(t.childList[k]), t.total[t.childList[k]]]);
  assert.deepEqual(roots.sort(), [['nginx', 1], ['node', 3]], 'the two node threads are one process, named without a made-up pid');
  // With pids (-F+pid), the pid is part of the name.
  const q = Profile.from({ version: 1, title: 't', unit: 'samples', kinds: ['native'],
    frames: { name: ['main'], module: [''], kind: [0] }, nodes: { parent: [-1], frame: [0] },
    threads: [{ pid: 4101, tid: 4101, comm: 'node' }, { pid: 4101, tid: 4102, comm: 'node' }],
    samples: { node: [0, 0], weight: null, time_ms: [0, 1], thread: [0, 1] }, counts: null, start_unix_ns: null, duration_ms: 2 });
  assert.equal(pidsKnown(q), true);
  const u = buildTree(q, { split: 'process' });
  assert.equal(u.name(u.childList[u.childStart[0]]), 'node [pid 4101]');
});

test('diff: vanished stacks keep their before width; normalised deltas are shares', () => {
  const a = buildTree(profile, { fromMs: 0, toMs: 1000 });
  const b = buildTree(profile, { fromMs: 1000, toMs: 3000 });
  const d = diffTrees(a, b, 'absolute');
  assert.equal(d.beforeTotal[0], a.total[0]);
  assert.equal(d.afterTotal[0], b.total[0]);
  for (let i = 1; i < d.tree.n; i++) {
    if (d.afterTotal[i] === 0) assert.ok(d.tree.total[i] >= d.beforeTotal[i] - 1e-9);
  }
  const n = diffTrees(a, b, 'normalized');
  assert.equal(n.delta[0], 0);
  assert.ok(Math.abs(n.beforeTotal[0] - b.total[0]) < 1e-6);
});

test('inverted trees give self weight to leaf functions; focus keeps the whole for "of all"', () => {
  // Self weight per function as `perf report --no-children` counts it.
  const leafSelf = new Map();
  forEachStack(data, (names, w) => leafSelf.set(names.at(-1), (leafSelf.get(names.at(-1)) ?? 0) + w));
  const top = [...leafSelf.entries()].sort((a, b) => b[1] - a[1])[0];
  for (const split of ['merge', 'thread']) {
    const inv = buildTree(profile, { invert: true, split });
    assert.equal(inv.inverted, true);
    const st = funcStats(inv, 0);
    const self = new Map();
    st.self.forEach((w, f) => w > 0 && self.set(inv.funcs.name[f], (self.get(inv.funcs.name[f]) ?? 0) + w));
    const best = [...self.entries()].sort((a, b) => b[1] - a[1])[0];
    assert.deepEqual(best, top, `${split}: top self function of the inverted tree is the top leaf`);
    for (const [name, w] of leafSelf) assert.equal(self.get(name), w, `${split}: self of ${name}`);
    // The outermost caller of every stack has no self weight of its own.
    const outer = new Set();
    forEachStack(data, (names) => outer.add(names[0]));
    for (const o of outer) if (!leafSelf.has(o)) assert.equal(self.get(o) ?? 0, 0, o);
  }
  const plain = buildTree(profile, {});
  const foc = buildTree(profile, { focus: 'memcpy' });
  assert.equal(foc.allTotal, plain.total[0], 'focus keeps the whole profile as "all"');
  assert.equal(plain.allTotal, plain.total[0]);
  const m = new Uint8Array(foc.funcs.name.length);
  m[foc.funcs.name.indexOf('memcpy')] = 1;
  const share = matchShare(foc, m, 0).all / foc.allTotal;
  assert.ok(Math.abs(share - weightWhere(data, { match: /^memcpy$/ }) / plain.total[0]) < 1e-12, `memcpy share ${share}`);
  assert.ok(share < 0.5, 'a minor function is not "100% of all" after focus');
});
