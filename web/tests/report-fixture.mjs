// A synthetic but realistic Run JSON (docs/run-json.md) for the report's
// browser tests and bench/report-size.sh: a connection sweep that saturates
// at 4 connections, host/process series, a profile with a subsecond stall,
// routes and findings. Deterministic for a given seed.

/** Small fast PRNG (mulberry32) so fixtures are reproducible. */
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

const STARTED = 1763760600000;

/**
 * Builds a run. Options: durationS, intervalMs, cores, samples (profile
 * samples, 0 for none), extraFrames (distinct synthetic frames, for size
 * benchmarks), seed, name, id, slower (multiplies latency: a regressed run),
 * findings (include findings), accessLog, threads (server threads with
 * per-thread series `thread.<comm>:<pid>:<tid>.*`: prefork workers of
 * uneven load, the first migrating most).
 */
export function makeRun(opts = {}) {
  const {
    durationS = 60,
    intervalMs = 1000,
    cores = 4,
    samples = 20000,
    extraFrames = 0,
    seed = 1,
    name = 'bid-before',
    id = '20261121-213000-a1b2',
    slower = 1,
    findings = true,
    accessLog = true,
    threads = 6,
  } = opts;
  const rand = rng(seed);
  const durationMs = durationS * 1000;
  const conns = [1, 2, 4, 8, 16];
  const phaseMs = durationMs / conns.length;
  const stall = [durationMs * 0.42, durationMs * 0.42 + 480];
  const inStall = (t) => t >= stall[0] && t < stall[1];
  const capacity = 1200 / slower;
  const phaseStats = conns.map((c, i) => {
    const rps = Math.min(c * 380 / slower, capacity) * (1 - 0.02 * rand());
    const base = 2.4 * slower;
    const queue = Math.max(0, c / (capacity / 380 * slower) - 1) * base * 1.6;
    const p50 = base + queue;
    const lat = { min: base * 0.3, mean: p50 * 1.1, max: p50 * 9, stdev: p50 * 0.4, p50, p75: p50 * 1.3, p80: p50 * 1.4, p90: p50 * 1.8, p95: p50 * 2.2, p99: p50 * 3.4, 'p99.9': p50 * 5, 'p99.99': p50 * 7 };
    const requests = Math.round(rps * phaseMs / 1000);
    return { index: i, label: `c=${c}`, connections: c, rate: null, start_ms: i * phaseMs, end_ms: (i + 1) * phaseMs, requests, duration_s: phaseMs / 1000, rps, errors: i === 4 ? 3 : 0, latency_ms: lat, slo: null };
  });
  const requests = phaseStats.reduce((a, p) => a + p.requests, 0);
  const errors = phaseStats.reduce((a, p) => a + p.errors, 0);
  const p99 = phaseStats[4].latency_ms.p99;
  const rpsAll = requests / durationS;
  const clause = (text, measured, limit, unit, lower) => ({ clause: text, pass: lower ? measured <= limit : measured >= limit, measured, limit, unit, margin: lower ? limit - measured : measured - limit, margin_pct: (100 * (lower ? limit - measured : measured - limit)) / limit });
  const slo = { clauses: [clause('p99<=25ms', p99, 25, 'ms', true), clause('p80<=10ms', phaseStats[4].latency_ms.p80, 10, 'ms', true), clause('rps>=1000', rpsAll, 1000, 'req/s', false)] };
  slo.pass = slo.clauses.every((c) => c.pass);

  // Series on the sampler's clock.
  const t = [];
  for (let x = 0; x < durationMs; x += intervalMs) t.push(x);
  const phaseAt = (x) => phaseStats[Math.min(conns.length - 1, Math.floor(x / phaseMs))];
  const noise = (s) => 1 + (rand() - 0.5) * s;
  const series = [];
  const add = (name, unit, f) => series.push({ name, unit, t_ms: t, v: t.map((x) => Math.round(f(x) * 1000) / 1000) });
  const stallSecond = (x) => x <= stall[0] && stall[0] < x + intervalMs;
  add('client.rps', 'req/s', (x) => phaseAt(x).rps * noise(0.05) * (stallSecond(x) ? 0.5 : 1));
  add('client.errors', 'errors/s', (x) => (phaseAt(x).errors && rand() < 0.2 ? 1 : 0));
  add('client.inflight', 'connections', (x) => phaseAt(x).connections);
  for (const [k, q] of [['p50', 'p50'], ['p90', 'p90'], ['p99', 'p99']]) add(`client.${k}_ms`, 'ms', (x) => phaseAt(x).latency_ms[q] * noise(0.1) * (stallSecond(x) && k === 'p99' ? 60 : 1));
  if (accessLog) {
    add('log.rps', 'req/s', (x) => phaseAt(x).rps * noise(0.05));
    add('log.p99_ms', 'ms', (x) => phaseAt(x).latency_ms.p99 * 0.8 * noise(0.1));
  }
  const util = (x) => Math.min(97, (phaseAt(x).rps / capacity) * 90) * (stallSecond(x) ? 0.3 : 1);
  for (let c = 0; c < cores; c++) {
    // One hot core: what pinning problems look like (field notes §2).
    const skew = c === 0 ? 1.05 : 0.85 - 0.1 * (c % 3);
    add(`cpu.${c}.user`, '%', (x) => util(x) * 0.7 * skew * noise(0.1));
    add(`cpu.${c}.system`, '%', (x) => util(x) * 0.25 * skew * noise(0.1));
    add(`cpu.${c}.iowait`, '%', () => rand() * 0.5);
    add(`cpu.${c}.idle`, '%', (x) => Math.max(0, 100 - util(x) * skew));
  }
  add('cpu.all.user', '%', (x) => util(x) * 0.6);
  add('cpu.all.system', '%', (x) => util(x) * 0.22);
  add('sched.ctxt', '/s', (x) => phaseAt(x).rps * 4.2 * noise(0.1));
  add('sched.procs_running', 'tasks', (x) => Math.round(Math.min(phaseAt(x).connections, 6) * noise(0.3)));
  add('sched.procs_blocked', 'tasks', (x) => (stallSecond(x) ? 2 : 0));
  add('vm.pgpgin', 'KiB/s', (x) => (stallSecond(x) ? 90000 : 120 * noise(0.5)));
  add('vm.pgpgout', 'KiB/s', () => 300 * noise(0.5));
  add('vm.pgmajfault', '/s', (x) => (stallSecond(x) ? 45 : rand() < 0.1 ? 1 : 0));
  add('mem.cached', 'bytes', (x) => 2.1e9 + x * 1000);
  add('mem.active_file', 'bytes', () => 1.2e9);
  add('mem.inactive_file', 'bytes', () => 0.8e9);
  add('mem.dirty', 'bytes', () => 4e6 * noise(0.5));
  add('disk.vda.r_iops', 'IOPS', (x) => (stallSecond(x) ? 2200 : 3 * noise(1)));
  add('disk.vda.w_iops', 'IOPS', () => 40 * noise(0.5));
  add('net.lo.rx_bytes', 'bytes/s', (x) => phaseAt(x).rps * 850 * noise(0.05));
  add('net.lo.tx_bytes', 'bytes/s', (x) => phaseAt(x).rps * 850 * noise(0.05));
  add('tcp.active_opens', '/s', () => rand() * 2);
  add('proc.cpu_user', '%', (x) => util(x) * 1.7 * noise(0.1));
  add('proc.cpu_system', '%', (x) => util(x) * 0.6 * noise(0.1));
  add('proc.rss', 'bytes', (x) => 48e6 + x * 20);
  add('proc.threads', 'threads', () => 5);
  add('proc.nvcsw', '/s', (x) => phaseAt(x).rps * 1.9 * noise(0.1));
  add('proc.nivcsw', '/s', (x) => phaseAt(x).rps * 0.2 * noise(0.2));
  add('proc.migrations', '/s', (x) => phaseAt(x).rps * 0.05 * noise(0.3));
  for (let c = 0; c < cores; c++) add(`proc.core.${c}`, '%', (x) => util(x) * (c === 0 ? 1 : 0.6) * noise(0.2));
  add('psi.cpu.some', '%', (x) => util(x) / 10);
  // Per-thread series from their own PRNG, so the rest of the run stays as it was.
  const trand = rng(seed + 7);
  const tnoise = (s) => 1 + (trand() - 0.5) * s;
  for (let k = 0; k < threads; k++) {
    const tid = 4250 + k;
    const key = `thread.demo-prefork-${k}:4242:${tid}`;
    // Uneven: worker k gets 1/(k+1) of the hot share; worker 0 migrates most.
    const share = 1 / (k + 1);
    add(`${key}.cpu`, '%', (x) => Math.min(100, util(x) * 1.2 * share * tnoise(0.2)));
    add(`${key}.migrations`, '/s', (x) => (phaseAt(x).rps / capacity) * (k === 0 ? 40 : 4 * share) * tnoise(0.3));
    add(`${key}.nvcsw`, '/s', (x) => phaseAt(x).rps * 0.4 * share * tnoise(0.2));
    add(`${key}.nivcsw`, '/s', (x) => phaseAt(x).rps * 0.05 * share * tnoise(0.3));
    add(`${key}.runq_delay_ms`, 'ms/s', (x) => util(x) * 2 * share * tnoise(0.3));
    add(`${key}.core`, 'core', (x) => (k === 0 ? Math.floor(x / intervalMs) % cores : k % cores));
  }

  const route = (method, uri, share, scale = 1) => {
    const count = Math.round(requests * share);
    const avg = phaseStats[2].latency_ms.mean * scale;
    return { method, uri, count, '1xx': 0, '2xx': count - (uri === '/bid' ? errors : 0), '3xx': 0, '4xx': 0, '5xx': uri === '/bid' ? errors : 0, min: avg * 0.2, max: avg * 12, sum: avg * count, avg, p50: avg * 0.9, p90: avg * 1.7, p95: avg * 2.1, p99: avg * 3.3, stddev: avg * 0.5, min_body: 0, max_body: 420, sum_body: count * 300, avg_body: 300 };
  };
  const client = [route('POST', '/bid', 0.9), route('GET', '/health', 0.07, 0.1), route('GET', '/campaigns/:id', 0.03, 2.5)];
  const routes = { client, access_log: accessLog ? client.map((r) => ({ ...r, avg: r.avg * 0.8, sum: r.sum * 0.8, p99: r.p99 * 0.8 })) : [] };

  return {
    version: 1,
    run: { id, name, tags: { build: slower > 1 ? 'feature-x' : 'main', host: 'lab-1' }, started_unix_ms: STARTED, duration_ms: durationMs, target: 'http://127.0.0.1:8080/bid', command: `keisoku run --target http://127.0.0.1:8080/bid --sweep-connections 1..16:x2 --profile perf --name ${name}`, machine: { hostname: 'lab-1', cores, kernel: '6.1.0-26-amd64', memory_bytes: 8 * 2 ** 30 }, interrupted: false, model: 'closed' },
    results: { version: 1, model: 'closed', started_unix_ms: STARTED, duration_ms: durationMs, partial: false, requests, duration_s: durationS, rps: rpsAll, errors, errors_by_kind: { connect_refused: 0, connect_timeout: 0, reset: errors, read_timeout: 0, malformed: 0, other: 0 }, latency_ms: phaseStats[4].latency_ms, phases: phaseStats, knee: 2, slo, best_passing_phase: 2, max_rate: null, targets: [], timeline: [], generator: [], warnings: slower > 1 ? ['generator thread 0 used 91% CPU: the numbers may describe keisoku, not the target'] : [], error_reasons: errors ? ['connection reset by peer (os error 104)'] : [] },
    phases: phaseStats.map((p) => ({ index: p.index, label: p.label, start_ms: p.start_ms, end_ms: p.end_ms, warmup: false, connections: p.connections, rate: null })),
    series,
    routes,
    profile: samples > 0 ? makeProfile({ samples, durationMs, stall, extraFrames, rand, slower }) : null,
    findings: findings
      ? [
          { id: 'stall', rule: 'subsecond-stall', title: 'Subsecond stall: server CPU samples dropped for ~480 ms while p99 rose 60x', severity: 'warning', score: 0.82, summary: 'The server stopped running requests for about half a second.', evidence: { text: ['CPU samples fell to 8% of their neighbours', 'p99 rose from 9 ms to 540 ms in the same second'], range_ms: stall, series: ['client.p99_ms', 'cpu.all.user'], frames: [{ name: 'logback_rollover', module: 'app', share: 0.61 }] }, impact: 'every request in flight waited up to 480 ms', suggestion: 'Move log rotation off the request path (async appender, or rotate by size outside the process).' },
          { id: 'hot-json', rule: 'hot-code', title: 'JSON parsing dominates request CPU', severity: 'critical', score: 0.9, evidence: { text: ['json_parse is 31% of on-CPU samples'], frames: [{ name: 'json_parse', share: 0.31 }] }, suggestion: 'Cache parsed objects instead of JSON strings.' },
        ]
      : [],
  };
}

/** A profile in docs/profile-json.md's columnar form. */
export function makeProfile({ samples, durationMs, stall, extraFrames = 0, rand, slower = 1 }) {
  const frames = { name: [], module: [], kind: [] };
  const fid = new Map();
  const frame = (name, module, kind) => {
    const k = `${name}\0${module}`;
    if (!fid.has(k)) {
      fid.set(k, frames.name.length);
      frames.name.push(name);
      frames.module.push(module);
      frames.kind.push(kind);
    }
    return fid.get(k);
  };
  const nodes = { parent: [], frame: [] };
  const child = new Map();
  const node = (parent, f) => {
    const k = `${parent}:${f}`;
    if (!child.has(k)) {
      child.set(k, nodes.parent.length);
      nodes.parent.push(parent);
      nodes.frame.push(f);
    }
    return child.get(k);
  };
  const path = (stack) => stack.reduce((p, [n, m, k]) => node(p, frame(n, m, k)), -1);
  const N = 1;
  const K = 0;
  const base = [['main', 'nginx', N], ['ngx_worker_process_cycle', 'nginx', N], ['ngx_process_events_and_timers', 'nginx', N]];
  const req = [...base, ['ngx_http_process_request', 'nginx', N], ['ngx_http_handler', 'nginx', N], ['bid_handler', 'app', N]];
  const hot = [
    [[...req, ['json_parse', 'app', N]], 0.31 * slower],
    [[...req, ['json_parse', 'app', N], ['memcpy', 'libc.so.6', N]], 0.06],
    [[...req, ['score_campaigns', 'app', N]], 0.18],
    [[...req, ['score_campaigns', 'app', N], ['regcomp', 'libc.so.6', N]], 0.05],
    [[...base, ['ngx_http_write_filter', 'nginx', N], ['writev', 'libc.so.6', N], ['do_syscall_64', '[kernel.kallsyms]', K], ['tcp_sendmsg', '[kernel.kallsyms]', K]], 0.12],
    [[...base, ['epoll_wait', 'libc.so.6', N], ['do_syscall_64', '[kernel.kallsyms]', K], ['ep_poll', '[kernel.kallsyms]', K]], 0.08],
    [[['swapper', '[kernel.kallsyms]', K], ['do_idle', '[kernel.kallsyms]', K], ['cpu_idle', '[kernel.kallsyms]', K]], 0.2],
  ];
  const leaves = hot.map(([s]) => path(s));
  const weights = hot.map(([, w]) => w);
  for (let i = 0; i < extraFrames; i++) {
    // Long tails of rarely sampled functions, as real services have.
    leaves.push(path([...req, [`lib_${i % 97}::fn_${i}`, `lib${i % 97}.so`, N], [`inner_${i}`, `lib${i % 97}.so`, N]]));
    weights.push(0.2 / Math.max(1, extraFrames));
  }
  const stallLeaf = path([...base, ['logback_rollover', 'app', N], ['copy_file_range', 'libc.so.6', N], ['do_syscall_64', '[kernel.kallsyms]', K], ['generic_copy_file_range', '[kernel.kallsyms]', K]]);
  const total = weights.reduce((a, b) => a + b, 0);
  const cum = [];
  let acc = 0;
  for (const w of weights) cum.push((acc += w / total));
  const pick = () => {
    const r = rand();
    let lo = 0;
    let hi = cum.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cum[mid] < r) lo = mid + 1;
      else hi = mid;
    }
    return leaves[lo];
  };
  const node_ = new Array(samples);
  const time = new Array(samples);
  const thread = new Array(samples);
  for (let i = 0; i < samples; i++) {
    let t = (i / samples) * durationMs + rand() * (durationMs / samples);
    // During the stall only the rollover runs: the other samples are dropped into it.
    if (t >= stall[0] && t < stall[1]) {
      node_[i] = rand() < 0.15 ? stallLeaf : leaves[leaves.length - 1 - extraFrames];
    } else node_[i] = pick();
    t = Math.round(t * 1000) / 1000;
    time[i] = t;
    thread[i] = Math.floor(rand() * 2);
  }
  return {
    version: 1,
    title: 'perf record -F 99 -g (nginx)',
    unit: 'samples',
    kinds: ['kernel', 'native', 'jit', 'interpreted', 'inlined', 'unknown'],
    frames,
    nodes,
    threads: [{ pid: 4242, tid: 4242, comm: 'nginx' }, { pid: 4243, tid: 4243, comm: 'nginx' }],
    samples: { node: node_, weight: null, time_ms: time, thread },
    counts: null,
    start_unix_ns: STARTED * 1e6,
    duration_ms: durationMs,
  };
}
