// Synthetic but realistic profiles for browser tests and the paint
// benchmark, plus reference computations done independently of the UI
// code (straight from the profile JSON), so tests check what is drawn
// against the data rather than against the UI's own arithmetic.

/** Deterministic PRNG (mulberry32). */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const KINDS = ['kernel', 'native', 'jit', 'interpreted', 'inlined', 'unknown'];
const COMMON = [
  ['__libc_start_main', 'libc.so.6', 1], ['main', 'server', 1], ['malloc', 'libc.so.6', 1], ['free', 'libc.so.6', 1],
  ['memcpy', 'libc.so.6', 1], ['epoll_wait', 'libc.so.6', 1], ['entry_SYSCALL_64', '[kernel.kallsyms]', 0],
  ['do_syscall_64', '[kernel.kallsyms]', 0], ['tcp_sendmsg', '[kernel.kallsyms]', 0], ['copy_user_generic', '[kernel.kallsyms]', 0],
  ['LazyCompile:*handleRequest /app/server.js:42', '/tmp/perf-4242.map', 2], ['JSON.parse', 'node', 1], ['cpu_idle', '[kernel.kallsyms]', 0],
  ['[unknown]', '', 5],
];

/**
 * A per-sample profile JSON (docs/profile-json.md) with `samples` samples
 * over `seconds`, about `frames` distinct frames and `threads` threads.
 * Stacks form a skewed tree (a few hot paths, a long tail) with a hot spot
 * in the middle second so heat maps have structure.
 */
export function syntheticProfile({ samples = 20000, frames = 400, seconds = 6, threads = 3, seed = 1, idleShare = 0.05 } = {}) {
  const r = rng(seed);
  const name = [];
  const module = [];
  const kind = [];
  for (const [n, m, k] of COMMON) {
    name.push(n);
    module.push(m);
    kind.push(k);
  }
  const libs = ['server', 'libssl.so.3', 'libz.so.1', 'node', '/tmp/perf-4242.map', '[kernel.kallsyms]', 'libpq.so.5'];
  while (name.length < frames) {
    const i = name.length;
    const lib = libs[Math.floor(r() * r() * libs.length)];
    const k = lib === '[kernel.kallsyms]' ? 0 : lib.startsWith('/tmp/perf') ? 2 : 1;
    const prefix = k === 2 ? 'LazyCompile:*' : k === 0 ? 'ksys_' : lib === 'server' ? 'srv::' : 'fn_';
    name.push(`${prefix}${i.toString(36)}_${['read', 'parse', 'encode', 'hash', 'route', 'lock', 'send'][i % 7]}`);
    module.push(lib);
    kind.push(k);
  }
  // Stack tree: node 0 __libc_start_main -> 1 main; then random extension
  // with preference for recent nodes (deep chains) and shared helpers.
  const parent = [-1, 0];
  const frame = [0, 1];
  const childKey = new Map();
  const child = (p, f) => {
    const key = p * 1048576 + f;
    let c = childKey.get(key);
    if (c === undefined) {
      c = parent.length;
      parent.push(p);
      frame.push(f);
      childKey.set(key, c);
    }
    return c;
  };
  const leaves = [];
  const nStacks = Math.max(8, Math.floor(frames * 1.5));
  const idleNode = child(child(0, 6), 12); // entry_SYSCALL_64 -> cpu_idle (an idle stack)
  const pool = frames - COMMON.length;
  // Hierarchical like real programs: few subsystems near the root, fan-out
  // growing with depth; a frame is a hash of (parent, choice) so repeated
  // choices merge into the same node.
  for (let s = 0; s < nStacks; s++) {
    let n = 1;
    const depth = 4 + Math.floor(r() * 16);
    for (let d = 0; d < depth; d++) {
      let f;
      if (d > 1 && r() < 0.08) {
        f = 2 + Math.floor(r() * 11); // shared helpers: malloc, memcpy, syscalls...
        if (f >= 12) f = 13;
      } else {
        const fan = d < 2 ? 5 : d < 5 ? 20 : 300;
        const k = Math.floor(Math.pow(r(), 2) * fan);
        let h = Math.imul(n ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(k + 1, 0xc2b2ae35) ^ d;
        h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d) >>> 0;
        f = COMMON.length + (h % pool);
      }
      n = child(n, f);
    }
    leaves.push(n);
  }
  const ns = samples;
  const node = new Array(ns);
  const time = new Array(ns);
  const thread = new Array(ns);
  const dur = seconds * 1000;
  for (let i = 0; i < ns; i++) {
    // Time: uniform, with an extra burst in second 2.
    let t = r() < 0.25 ? 2000 + r() * 300 : r() * dur;
    t = Math.round(t * 1000) / 1000;
    time[i] = t;
    thread[i] = Math.floor(r() * threads);
    if (r() < idleShare) node[i] = idleNode;
    else node[i] = leaves[Math.floor(Math.pow(r(), 2.2) * leaves.length)];
  }
  // Sort by time, as the contract requires ascending time_ms.
  const order = Array.from({ length: ns }, (_, i) => i).sort((a, b) => time[a] - time[b]);
  const threadsArr = [];
  for (let t = 0; t < threads; t++) threadsArr.push({ pid: t < 2 ? 4242 : 5151, tid: 4242 + t * 7, comm: t < 2 ? 'server' : 'worker' });
  return {
    version: 1,
    title: `synthetic ${ns} samples`,
    unit: 'samples',
    kinds: KINDS,
    frames: { name, module, kind },
    nodes: { parent, frame },
    threads: threadsArr,
    samples: { node: order.map((i) => node[i]), weight: null, time_ms: order.map((i) => time[i]), thread: order.map((i) => thread[i]) },
    counts: null,
    start_unix_ns: 1763700000000000000,
    duration_ms: dur,
  };
}

/** Folded-stack text ("a;b;c 12") of a profile: the input `keisoku flame` reads. */
export function toFolded(p) {
  const w = new Map();
  const nodes = p.samples ? p.samples.node : null;
  const add = (n, v) => w.set(n, (w.get(n) ?? 0) + v);
  if (nodes) nodes.forEach((n, i) => add(n, p.samples.weight ? p.samples.weight[i] : 1));
  else p.counts.forEach((c, n) => c && add(n, c));
  const lines = [];
  for (const [n, v] of w) lines.push(`${stackNames(p, n).join(';')} ${v}`);
  return lines.sort().join('\n') + '\n';
}

/** Frame names from root to the node. */
export function stackNames(p, node) {
  const out = [];
  for (let n = node; n >= 0; n = p.nodes.parent[n]) out.push(p.frames.name[p.nodes.frame[n]]);
  return out.reverse();
}

/** The idle frames the synthetic profiles use (keisoku's list in a page). */
export const IDLE = new Set(['cpu_idle', 'intel_idle', 'default_idle', 'poll_idle', 'do_idle', 'swapper']);

/**
 * Reference iteration over a profile's weighted stacks:
 * calls fn(names[], weight, time, thread) per sample (or per node for counts).
 */
export function forEachStack(p, fn) {
  const cache = new Map();
  const names = (n) => {
    let s = cache.get(n);
    if (!s) cache.set(n, (s = stackNames(p, n)));
    return s;
  };
  if (p.samples) {
    const s = p.samples;
    for (let i = 0; i < s.node.length; i++) {
      fn(names(s.node[i]), s.weight ? s.weight[i] : 1, s.time_ms ? s.time_ms[i] : null, s.thread ? s.thread[i] : null);
    }
  } else {
    p.counts.forEach((c, n) => c && fn(names(n), c, null, null));
  }
}

/** Total weight (or, with `count`, the number of samples), optionally filtered: { from, to, idle (default true), prefix: names[] , thread }. */
export function weightWhere(p, { from = null, to = null, idle = true, prefix = null, match = null, threads = null, count = false } = {}) {
  let total = 0;
  forEachStack(p, (names, w, t, th) => {
    if (from !== null && t !== null && t < from) return;
    if (to !== null && t !== null && t >= to) return;
    if (!idle && names.some((n) => IDLE.has(n))) return;
    if (threads && th !== null && !threads.includes(th)) return;
    if (prefix && (names.length < prefix.length || prefix.some((f, i) => names[i] !== f))) return;
    if (match && !names.some((n) => match.test(n))) return;
    total += count ? 1 : w;
  });
  return total;
}

/** A Chrome .cpuprofile (node --cpu-prof) with the same shape of stacks. */
export function toCpuprofile(p) {
  // cpuprofile nodes: id 1 = (root); each profile node gets id = index + 2.
  const nodes = [{ id: 1, callFrame: { functionName: '(root)', scriptId: '0', url: '', lineNumber: -1, columnNumber: -1 }, hitCount: 0, children: [] }];
  const byId = [nodes[0]];
  p.nodes.parent.forEach((par, i) => {
    const f = p.nodes.frame[i];
    const n = {
      id: i + 2,
      callFrame: { functionName: p.frames.name[f], scriptId: String(1 + (f % 5)), url: p.frames.module[f] ? `file:///app/${p.frames.module[f].replace(/[^\w.]/g, '')}.js` : '', lineNumber: f % 300, columnNumber: 4 },
      hitCount: 0,
      children: [],
    };
    nodes.push(n);
    byId.push(n);
    (par < 0 ? nodes[0] : byId[par + 1]).children.push(n.id);
  });
  const samples = [];
  const timeDeltas = [];
  let prev = 0;
  p.samples.node.forEach((n, i) => {
    const us = Math.round(p.samples.time_ms[i] * 1000);
    samples.push(n + 2);
    timeDeltas.push(us - prev);
    prev = us;
    nodes[n + 1].hitCount++;
  });
  return { nodes, startTime: 1000000, endTime: 1000000 + prev + 1, samples, timeDeltas };
}
