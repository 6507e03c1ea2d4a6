// Unit tests of the flame page's view state and layouts in Node (no
// browser): the URL form of a view round-trips and never guesses at what
// it cannot read, every key in the help does something, left-heavy keeps
// the merged weights, the time-ordered tree keeps sample order, and the
// callers half of a sandwich meets the callees half at the same width.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { build } from 'esbuild';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { WEB } from './helpers/browser.mjs';
import { syntheticProfile, forEachStack, weightWhere, IDLE } from './helpers/profiles.mjs';

const dir = mkdtempSync(join(tmpdir(), 'keisoku-views-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const entry = join(dir, 'entry.ts');
const src = (f) => join(WEB, 'src/flame', f);
writeFileSync(
  entry,
  [
    `export * from '${src('viewstate.ts')}';`,
    `export * from '${src('keys.ts')}';`,
    `export * from '${src('tree.ts')}';`,
    `export * from '${src('timeorder.ts')}';`,
    `export { Profile, setIdleFrames } from '${src('profile.ts')}';`,
  ].join('\n'),
);
await build({ entryPoints: [entry], bundle: true, format: 'esm', platform: 'neutral', outfile: join(dir, 'views.mjs'), logLevel: 'error' });
const m = await import(pathToFileURL(join(dir, 'views.mjs')).href);
const { decodeView, encodeView, defaultView, fitView, nextMode, FLAME_KEYS, keyAction, buildTree, buildTimeOrderTree, timeOrderUnavailable, Profile, setIdleFrames } = m;
setIdleFrames(IDLE);

test('a view round-trips through the URL hash, names with any characters included', () => {
  const v = {
    ...defaultView(),
    panel: 'sandwich',
    mode: 'left-heavy',
    zoom: ['__libc_start_main', 'main', 'a&b=c #d', 'Ünïcødé<T>::f(int, char*)'],
    search: 'malloc|memcpy',
    focus: 'handle_request',
    hide: '^std::',
    invert: true,
    icicle: true,
    split: 'thread',
    idle: false,
    threads: 'p:4242',
    from: 1.5,
    to: 3,
    fn: 'memcpy',
  };
  const hash = encodeView(v);
  assert.ok(hash.startsWith('#'));
  assert.deepEqual(decodeView(hash), { view: v, ignored: [] });
  assert.equal(encodeView(defaultView()), '', 'the default view is the bare URL');
  // Equal views give equal links (fixed key order).
  assert.equal(encodeView({ ...v }), hash);
});

test('only what differs from the page preset goes into the link', () => {
  const base = { ...defaultView(), search: 'ngx_', invert: true };
  assert.equal(encodeView(base, base), '');
  const off = encodeView({ ...base, invert: false, search: '' }, base);
  assert.equal(off, '#q=&invert=0');
  assert.deepEqual(decodeView(off, base).view, { ...base, invert: false, search: '' });
});

test('a link with settings it cannot read names each one instead of guessing', () => {
  const { view, ignored } = decodeView('#mode=sideways&invert=maybe&from=-2&threads=x:1&colour=red&q=ok&view=sandwich');
  assert.equal(view.mode, 'merged');
  assert.equal(view.invert, false);
  assert.equal(view.from, null);
  assert.equal(view.threads, 'all');
  assert.equal(view.search, 'ok', 'what parses is still applied');
  assert.equal(view.panel, 'flame', 'a sandwich needs a function');
  assert.equal(ignored.length, 6);
  for (const k of ['mode=sideways', 'invert=maybe', 'from=-2', 'threads=x:1', 'colour=red', 'view=sandwich']) {
    assert.ok(ignored.some((s) => s.startsWith(k)), `${k} is reported: ${ignored}`);
  }
});

test('fitView drops what the profile cannot show, with the reason', () => {
  const v = { ...defaultView(), mode: 'time-order', threads: 't:1', split: 'thread', from: 1, to: 2 };
  const none = fitView(v, { timeOrder: 'no sample timestamps', threads: false, time: false });
  assert.equal(none.view.mode, 'merged');
  assert.equal(none.view.threads, 'all');
  assert.equal(none.view.split, 'merge');
  assert.equal(none.view.from, null);
  assert.equal(none.ignored.length, 4);
  assert.match(none.ignored[0], /time-order: no sample timestamps/);
  const all = fitView(v, { timeOrder: null, threads: true, time: true });
  assert.deepEqual(all, { view: v, ignored: [] });
  assert.equal(nextMode('merged', { timeOrder: null }), 'left-heavy');
  assert.equal(nextMode('left-heavy', { timeOrder: null }), 'time-order');
  assert.equal(nextMode('time-order', { timeOrder: null }), 'merged');
  assert.equal(nextMode('left-heavy', { timeOrder: 'none' }), 'merged', 'an unavailable mode is skipped');
});

test('every key in the help maps to its action; typing and modifier keys are left alone', () => {
  const key = (k, mods = {}) => ({ key: k, ctrlKey: false, metaKey: false, altKey: false, ...mods });
  const keyed = FLAME_KEYS.filter((k) => k.action !== null);
  assert.ok(keyed.length >= 8);
  for (const row of keyed) {
    const name = row.key === 'Esc' ? 'Escape' : row.key;
    assert.equal(keyAction(key(name), false), row.action, `${row.key} -> ${row.action}`);
  }
  for (const k of ['?', 'c', 's', 'm', 'b', 'i', '/']) assert.equal(keyAction(key(k), true), null, `${k} while typing`);
  assert.equal(keyAction(key('Escape'), true), 'reset', 'Esc works in a field');
  assert.equal(keyAction(key('c', { ctrlKey: true }), false), null, 'ctrl+c is the browser copy');
  assert.equal(keyAction(key('x'), false), null);
  // Keys are unique.
  assert.equal(new Set(keyed.map((k) => k.key)).size, keyed.length);
});

const data = syntheticProfile({ samples: 6000, frames: 300, seconds: 3, threads: 3, seed: 11 });
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

/** Children of each node are laid out contiguously in list order. */
function assertContiguous(tree) {
  for (let i = 0; i < tree.n; i++) {
    let cur = tree.x[i];
    for (let k = tree.childStart[i]; k < tree.childStart[i + 1]; k++) {
      assert.equal(tree.x[tree.childList[k]], cur);
      cur += tree.total[tree.childList[k]];
    }
  }
}

/**
 * A time-ordered tree's boxes: children left to right, inside their parent,
 * never overlapping; a parent's own samples between two callees leave a gap
 * there (they ran then), so children need not be packed.
 */
function assertInTimeOrder(tree) {
  for (let i = 0; i < tree.n; i++) {
    let cur = tree.x[i];
    for (let k = tree.childStart[i]; k < tree.childStart[i + 1]; k++) {
      const c = tree.childList[k];
      assert.ok(tree.x[c] >= cur, `box ${tree.name(c)} at ${tree.x[c]} overlaps its left neighbour (ends ${cur})`);
      cur = tree.x[c] + tree.total[c];
    }
    assert.ok(cur <= tree.x[i] + tree.total[i], `children of ${tree.name(i)} end past it`);
  }
}

test('left heavy: the same merged stacks, heaviest child first at every node', () => {
  for (const opts of [{}, { invert: true }, { hide: /^main$/ }, { split: 'thread' }]) {
    const merged = buildTree(profile, opts);
    const heavy = buildTree(profile, { ...opts, leftHeavy: true });
    assert.deepEqual(pathWeights(heavy), pathWeights(merged));
    for (let i = 0; i < heavy.n; i++) {
      for (let k = heavy.childStart[i] + 1; k < heavy.childStart[i + 1]; k++) {
        assert.ok(heavy.total[heavy.childList[k - 1]] >= heavy.total[heavy.childList[k]], 'sorted by weight');
      }
    }
    assertContiguous(heavy);
  }
});

test('switching merged <-> left heavy reorders the same tree in place, and back exactly', () => {
  const t = buildTree(profile, {});
  const x = Float64Array.from(t.x);
  const list = Int32Array.from(t.childList);
  t.orderChildren('weight');
  const heavy = buildTree(profile, { leftHeavy: true });
  assert.deepEqual(leavesX(t), leavesX(heavy), 'the same layout as a left-heavy build');
  t.orderChildren('name');
  assert.deepEqual(t.x, x);
  assert.deepEqual(t.childList, list);
  // Without a saved copy (a tree built left heavy), name order is sorted back.
  heavy.orderChildren('name');
  assert.deepEqual(leavesX(heavy), leavesX(t));
});

/** x and width per root-to-node name path. */
function leavesX(tree) {
  const out = new Map();
  const names = new Array(tree.n);
  names[0] = '';
  for (let i = 1; i < tree.n; i++) {
    names[i] = names[tree.parent[i]] + ';' + tree.name(i);
    out.set(names[i], `${tree.x[i]}+${tree.total[i]}`);
  }
  return out;
}

/** A profile from stacks given as "a;b;c" strings with times (ms) and threads. */
function handMade(samples, threads = [{ pid: 1, tid: 1, comm: 'x' }]) {
  const frames = [];
  const nodes = { parent: [], frame: [] };
  const nodeOf = new Map();
  const frameOf = (n) => {
    let f = frames.indexOf(n);
    if (f < 0) f = frames.push(n) - 1;
    return f;
  };
  const node = (stack) => {
    let p = -1;
    let key = '';
    for (const name of stack.split(';')) {
      key += ';' + name;
      let n = nodeOf.get(key);
      if (n === undefined) {
        n = nodes.parent.push(p) - 1;
        nodes.frame.push(frameOf(name));
        nodeOf.set(key, n);
      }
      p = n;
    }
    return p;
  };
  const s = { node: [], weight: null, time_ms: [], thread: [] };
  for (const [stack, t, th = 0] of samples) {
    s.node.push(node(stack));
    s.time_ms.push(t);
    s.thread.push(th);
  }
  return Profile.from({ version: 1, kinds: ['native'], frames: { name: frames, module: frames.map(() => ''), kind: frames.map(() => 0) }, nodes, threads, samples: s, counts: null });
}

/** Leaves of a tree in drawing order (left to right), as name paths with their total. */
function leavesInOrder(tree) {
  const out = [];
  const walk = (n, path) => {
    const kids = [];
    for (let k = tree.childStart[n]; k < tree.childStart[n + 1]; k++) kids.push(tree.childList[k]);
    if (!kids.length && n > 0) out.push(`${path.join(';')}=${tree.total[n]}`);
    for (const c of kids) walk(c, [...path, tree.name(c)]);
  };
  walk(0, []);
  return out;
}

test('time order: samples left to right as taken; only neighbours merge', () => {
  // Out of order on purpose: the tree sorts by time, not by input order.
  const p = handMade([
    ['main;work;parse', 30],
    ['main;work;parse', 10],
    ['main;work;parse', 20],
    ['main;idle_wait', 40],
    ['main;work;parse', 50],
    ['main;work;render', 60],
    ['main;work;render', 70],
  ]);
  const t = buildTimeOrderTree(p);
  assert.deepEqual(leavesInOrder(t), ['main;work;parse=3', 'main;idle_wait=1', 'main;work;parse=1', 'main;work;render=2']);
  // main is open the whole time: one box over all seven samples.
  assert.equal(t.childStart[1] - t.childStart[0], 1);
  assert.equal(t.total[t.childList[t.childStart[0]]], 7);
  assertInTimeOrder(t);
  // The merged tree of the same samples has one parse box.
  assert.deepEqual(leavesInOrder(buildTree(p)), ['main;idle_wait=1', 'main;work;parse=4', 'main;work;render=2']);
  // A time range keeps its samples' order.
  assert.deepEqual(leavesInOrder(buildTimeOrderTree(p, { fromMs: 35, toMs: 65 })), ['main;idle_wait=1', 'main;work;parse=1', 'main;work;render=1']);
});

test('time order per thread: each thread keeps its own open stack', () => {
  const threads = [{ pid: 1, tid: 1, comm: 'a' }, { pid: 1, tid: 2, comm: 'b' }];
  const p = handMade([['main;x', 1, 0], ['main;y', 2, 1], ['main;x', 3, 0], ['main;y', 4, 1]], threads);
  // Merged threads interleave: four boxes.
  assert.deepEqual(leavesInOrder(buildTimeOrderTree(p)), ['main;x=1', 'main;y=1', 'main;x=1', 'main;y=1']);
  // Split by thread: each thread's x continues.
  assert.deepEqual(leavesInOrder(buildTimeOrderTree(p, { split: 'thread' })), ['a [1/1];main;x=2', 'b [1/2];main;y=2']);
});

test('time order keeps every sample and each stack its weight under the filters', () => {
  assert.equal(timeOrderUnavailable(profile), null);
  for (const opts of [{}, { hideIdle: true }, { threads: new Set([1]) }, { fromMs: 500, toMs: 1500 }, { invert: true }, { focus: 'memcpy' }]) {
    const t = buildTimeOrderTree(profile, opts);
    const merged = buildTree(profile, opts);
    assert.equal(t.total[0], merged.total[0], JSON.stringify(opts));
    assert.equal(t.sampleCount, merged.sampleCount);
    // Per distinct stack, the same weight as the merged tree (boxes summed).
    const self = (tree) => {
      const out = new Map();
      const names = new Array(tree.n);
      names[0] = '';
      for (let i = 1; i < tree.n; i++) {
        names[i] = names[tree.parent[i]] + ';' + tree.name(i);
        if (tree.self[i]) out.set(names[i], (out.get(names[i]) ?? 0) + tree.self[i]);
      }
      return out;
    };
    assert.deepEqual(self(t), self(merged));
    assertInTimeOrder(t);
  }
  const counts = Profile.from({ ...data, samples: null, counts: data.nodes.parent.map(() => 1), threads: [] });
  assert.match(timeOrderUnavailable(counts), /only totals per stack/);
  const noTimes = Profile.from({ ...data, samples: { ...data.samples, time_ms: null } });
  assert.match(timeOrderUnavailable(noTimes), /no sample timestamps/);
  assert.throws(() => buildTimeOrderTree(noTimes), /no sample timestamps/);
});

// Issue 16: time order used to refuse a profile whose exact tree exceeds the
// box limit (the 1M-sample benchmark); now it draws every box wide enough to
// see, in place, and says what it folded.
test('time order past its box limit draws the boxes wide enough to see, each where it ran', () => {
  const full = buildTimeOrderTree(profile);
  assert.ok(full.n > 5000);
  assert.equal(full.foldedBelow, null, 'under the limit every box is there');
  for (const opts of [{}, { split: 'thread' }, { focus: 'memcpy' }, { invert: true, hideIdle: true }]) {
    const exact = buildTimeOrderTree(profile, opts);
    const coarse = buildTimeOrderTree(profile, opts, 4096);
    if (exact.n < 4096) {
      // A focused view can fit exactly: then it is exact.
      assert.equal(coarse.foldedBelow, null, JSON.stringify(opts));
      assert.equal(coarse.n, exact.n);
      continue;
    }
    assert.ok(coarse.foldedBelow && coarse.foldedBelow.boxes > 0, JSON.stringify(opts));
    assert.ok(coarse.n < 4096 && coarse.n < exact.n);
    assert.equal(coarse.total[0], exact.total[0], 'no weight lost');
    assert.equal(coarse.sampleCount, exact.sampleCount);
    const minW = coarse.foldedBelow.minWeight;
    assert.equal(minW, exact.total[0] / coarse.foldedBelow.resolution);
    assert.ok(coarse.foldedBelow.resolution >= 128);
    // Every kept box is as heavy as the cut, and is the exact tree's box
    // that opened at the same moment on the same path: same place, same width.
    const at = (t) => {
      const out = new Map();
      const names = [''];
      for (let i = 1; i < t.n; i++) {
        names[i] = `${names[t.parent[i]]};${t.name(i)}`;
        out.set(`${names[i]}@${t.x[i]}`, t.total[i]);
      }
      return out;
    };
    const e = at(exact);
    for (let i = 1; i < coarse.n; i++) {
      if (coarse.funcs.kind[coarse.func[i]] !== 'thread') assert.ok(coarse.total[i] >= minW, `${coarse.name(i)}: ${coarse.total[i]} < ${minW}`);
    }
    for (const [k, w] of at(coarse)) assert.equal(w, e.get(k), `${k}: coarse ${w}, exact ${e.get(k)}`);
    assertInTimeOrder(coarse);
    // And every exact box at least that heavy is kept (nothing visible is lost).
    const c = at(coarse);
    for (const [k, w] of e) if (w >= minW) assert.ok(c.has(k), `${k} (${w}) was dropped`);
  }
  // Even at that resolution too many: the old refusal, naming what to narrow.
  assert.throws(() => buildTimeOrderTree(profile, {}, 8), (e) => e instanceof m.TimeOrderTooLarge && /more than 8 boxes.*pick one thread or a shorter time range/.test(e.message));
  // One thread over a short range fits exactly.
  const small = buildTimeOrderTree(profile, { threads: new Set([0]), fromMs: 0, toMs: 200 }, 4096);
  assert.equal(small.foldedBelow, null);
  assert.equal(small.total[0], weightWhere(data, { threads: [0], from: 0, to: 200 }));
});

// Issue 16: drawn folded, counted exactly. A folded box's samples are in
// its caller's drawing, but the numbers a user reads (self, search shares,
// the function table) come from exactAt: the merged tree of a node's own
// samples, equal to what the exact time-ordered tree holds under that box.
test('time order drawn folded: every number read from it is the exact count of its samples', () => {
  let total = 0;
  for (const opts of [{}, { split: 'thread' }, { invert: true, hideIdle: true }]) {
    const exact = buildTimeOrderTree(profile, opts);
    // Just past the limit: drawn at the finest resolution, many boxes kept.
    const coarse = buildTimeOrderTree(profile, opts, Math.floor(exact.n * 0.9));
    assert.ok(coarse.foldedBelow && coarse.foldedBelow.boxes > 0 && coarse.exactAt, JSON.stringify(opts));
    assert.equal(exact.exactAt, null, 'an exact tree needs no exact view');
    // The whole view: the merged tree of every sample in view.
    const whole = coarse.exactAt(0);
    assert.equal(whole.node, 0);
    assert.deepEqual(m.funcStats(whole.tree, 0), m.funcStats(exact, 0), JSON.stringify(opts));
    // A kept box: the exact tree's box at the same place (path and x).
    const key = (t, n) => `${t.path(n).map((p) => t.name(p)).join(';')}@${t.x[n]}`;
    const exactBox = new Map();
    for (let n = 1; n < exact.n; n++) exactBox.set(key(exact, n), n);
    let checked = 0;
    // Boxes spread over the tree: leaves, callers, group roots.
    for (let n = 1; n < coarse.n; n += Math.max(1, Math.floor(coarse.n / 20))) {
      const e = exactBox.get(key(coarse, n));
      assert.ok(e !== undefined, key(coarse, n));
      const v = coarse.exactAt(n);
      assert.equal(v.tree.name(v.node), coarse.name(n));
      assert.equal(v.tree.total[v.node], exact.total[e], `${key(coarse, n)}: total`);
      assert.equal(coarse.self[n], exact.self[e], `${key(coarse, n)}: self is the box's own samples, not what was folded into it`);
      assert.deepEqual(m.funcStats(v.tree, v.node), m.funcStats(exact, e), `${key(coarse, n)}: function stats`);
      // Outermost-match shares of every function under the box.
      for (const fn of ['memcpy', 'malloc', 'parse']) {
        const match = new Uint8Array(exact.funcs.name.length);
        exact.funcs.name.forEach((name, f) => (match[f] = name === fn ? 1 : 0));
        assert.equal(m.matchShare(v.tree, match, v.node).zoom, m.matchShare(exact, match, e).zoom, `${key(coarse, n)}: ${fn}`);
      }
      checked++;
    }
    assert.ok(checked >= Math.min(6, coarse.n - 1), `checked ${checked} boxes of ${coarse.n}`);
    total += checked;
  }
  assert.ok(total > 20, `${total} boxes checked`);
});

test('sandwich halves: callers and callees of a function have the same width, that of its stacks', () => {
  for (const fn of ['memcpy', 'malloc', 'main']) {
    let through = 0;
    const callerPaths = new Map();
    forEachStack(data, (names, w) => {
      const i = names.indexOf(fn);
      if (i < 0) return;
      through += w;
      const key = names.slice(0, i + 1).reverse().join(';');
      callerPaths.set(key, (callerPaths.get(key) ?? 0) + w);
    });
    assert.ok(through > 0, `${fn} is in the fixture`);
    const callers = buildTree(profile, { callers: fn });
    const callees = buildTree(profile, { focus: fn });
    assert.equal(callers.total[0], through);
    assert.equal(callees.total[0], through);
    assert.equal(callers.allTotal, 6000, 'shares stay of the whole profile');
    // The only child of the root is the function itself.
    assert.equal(callers.childStart[1] - callers.childStart[0], 1);
    assert.equal(callers.name(callers.childList[0]), fn);
    // Each leaf-to-root path of callers is a caller chain of the data.
    const got = new Map();
    const names = new Array(callers.n);
    names[0] = '';
    for (let i = 1; i < callers.n; i++) {
      names[i] = (callers.parent[i] === 0 ? '' : names[callers.parent[i]] + ';') + callers.name(i);
      if (callers.self[i]) got.set(names[i], callers.self[i]);
    }
    assert.deepEqual(got, callerPaths);
  }
});
