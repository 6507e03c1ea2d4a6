// Time until a flame graph HTML page of 1,000,000 samples (100,000+
// distinct frames) is first painted in headless Chromium.
//
//   node bench/flame-paint.mjs [--samples N] [--frames N] [--runs N] [--via template|binary]
//                              [--page-tool PATH] [--form samples|counts] [--page flame|scope]
//
// Three numbers per run, all from the page's own clock (ms since navigation):
//   first-paint  the `keisoku:first-paint` mark, emitted right after the
//                flame graph's first canvas draw;
//   first-frame  the `keisoku:first-frame` mark, in the animation frame
//                after that draw (the frame that shows it);
//   interactive  the full tree built (after the preview), function table and
//                legend done, and the next frame shown.
// The page comes from `keisoku flame` when --via binary (KEISOKU_BIN) and
// otherwise from profile JSON made here: with per-sample data (time and
// thread per sample: the heavier form, as perf input and stored runs give)
// or counts per node. --page-tool (crates/report's `profile_page` example,
// which bench/flame-paint.sh builds) embeds it exactly as `keisoku flame`
// does; without it the JSON goes into the page as is (the form run reports
// and hand-made pages use).
import { writeFileSync, statSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { launch, open, templatePage, scratch, runBin, keisokuBin } from '../web/tests/helpers/browser.mjs';
import { syntheticProfile, toFolded } from '../web/tests/helpers/profiles.mjs';

const arg = (name, def) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : def;
};
const samples = Number(arg('samples', 1000000));
const frames = Number(arg('frames', 120000));
const runs = Number(arg('runs', 5));
const via = arg('via', 'template');
// samples: per-sample columns (time, thread), as `scope` pages and perf
// input carry; counts: self weight per stack node, as folded input gives.
const form = arg('form', 'samples');
const pageTool = arg('page-tool', process.env.KEISOKU_PAGE_TOOL || '');
// scope: the `keisoku scope` page of the per-sample data (heat map above
// the flame graph, idle samples hidden); needs --page-tool.
const entry = arg('page', 'flame');
if (entry === 'scope' && (form !== 'samples' || via === 'binary' || !pageTool)) throw new Error('--page scope needs --form samples and --page-tool');

const dir = scratch('flame-paint');
const t0 = Date.now();
const profile = syntheticProfile({ samples, frames, seconds: 300, threads: 8, seed: 42 });
// Distinct frames that occur in sampled stacks (not merely in the table).
const used = new Set();
for (const leaf of new Set(profile.samples.node)) for (let n = leaf; n >= 0; n = profile.nodes.parent[n]) used.add(profile.frames.name[profile.nodes.frame[n]]);
const distinct = used.size;
console.error(`generated ${samples} samples, ${distinct} distinct frames, ${profile.nodes.parent.length} stack nodes in ${Date.now() - t0} ms`);

let html = join(dir, `${entry}-${samples}-${via === 'binary' ? 'binary' : form}.html`);
if (via === 'binary') {
  if (!keisokuBin()) throw new Error('--via binary needs KEISOKU_BIN');
  const folded = join(dir, `flame-${samples}.folded`);
  writeFileSync(folded, toFolded(profile));
  runBin(['flame', folded, '-o', html]);
} else {
  let p = profile;
  if (form === 'counts') {
    const counts = new Array(p.nodes.parent.length).fill(0);
    for (const n of p.samples.node) counts[n]++;
    p = { ...p, samples: null, counts, threads: [] };
  }
  if (pageTool) {
    const json = join(dir, `flame-${samples}-${form}.json`);
    writeFileSync(json, JSON.stringify(p));
    execFileSync(pageTool, [entry, json, html], { stdio: ['ignore', 'ignore', 'inherit'] });
  } else writeFileSync(html, templatePage(profile.title, 'flame', JSON.stringify({ title: profile.title, view: {}, profile: p })));
}
const embedding = readFileSync(html, 'utf8').includes('"encoding":"compact-1"') ? 'compact' : 'json';
const mb = statSync(html).size / 1e6;
console.error(`page: ${html} (${mb.toFixed(1)} MB, via ${via}, ${embedding} embedding)`);

// Peer: inferno's flamegraph.pl-compatible SVG of the same stacks, opened in
// the same browser (default --minwidth 0.01%, which drops thinner frames, and
// --minwidth 0, which keeps every frame as our canvas does).
const inferno = [join(process.cwd(), 'bench/tools/bin/inferno-flamegraph'), 'inferno-flamegraph'].find((b) => {
  try {
    return execFileSync(b, ['--help'], { stdio: ['ignore', 'pipe', 'ignore'] }).length > 0;
  } catch {
    return false;
  }
});
const peers = [];
const PEER_TIMEOUT_MS = 60000;
if (inferno && arg('peers', 'yes') !== 'no') {
  const folded = join(dir, `flame-${samples}.folded`);
  writeFileSync(folded, toFolded(profile));
  for (const [label, extra] of [['inferno-svg', []], ['inferno-svg-minwidth0', ['--minwidth', '0']]]) {
    const svg = join(dir, `${label}.svg`);
    const t = Date.now();
    writeFileSync(svg, execFileSync(inferno, [...extra, '--title', 'peer', folded], { maxBuffer: 1 << 30 }));
    peers.push({ label, svg, mb: statSync(svg).size / 1e6, buildMs: Date.now() - t, load: [] });
    console.error(`peer ${label}: ${(statSync(svg).size / 1e6).toFixed(1)} MB SVG in ${Date.now() - t} ms`);
  }
} else console.error('peer inferno-flamegraph not found (bench/stacks.sh installs it into bench/tools); measuring keisoku only');

// A scope page opens with idle samples hidden.
let expectedTotal = samples;
if (entry === 'scope') {
  const IDLE = new Set(['cpu_idle', 'intel_idle', 'default_idle', 'poll_idle', 'do_idle', 'swapper']);
  const idleNode = new Uint8Array(profile.nodes.parent.length);
  profile.nodes.parent.forEach((par, n) => (idleNode[n] = (par >= 0 && idleNode[par]) || IDLE.has(profile.frames.name[profile.nodes.frame[n]]) ? 1 : 0));
  expectedTotal = profile.samples.node.filter((n) => !idleNode[n]).length;
}

const browser = await launch();
const firstPaint = [];
const firstFrame = [];
const interactive = [];
const zooms = [];
const searches = [];
const resets = [];
const viewOps = [];
for (let r = 0; r < runs; r++) {
  const { page, errors, ctx } = await open(browser, html);
  const m = await page.evaluate(
    () =>
      new Promise((resolve) => {
        requestAnimationFrame(() =>
          requestAnimationFrame(() => {
            const mark = performance.getEntriesByName('keisoku:first-paint')[0];
            const fp = mark ? mark.startTime : NaN;
            const frameMark = performance.getEntriesByName('keisoku:first-frame')[0];
            const ff = frameMark ? frameMark.startTime : NaN;
            // Then wait for the full tree (large profiles paint a preview first).
            window.keisoku.flame.ready.then(() =>
              requestAnimationFrame(() => resolve({ fp, ff, ready: performance.now(), total: window.keisoku.flame.stats().total })),
            );
          }),
        );
      }),
  );
  if (errors.length) throw new Error(`page errors: ${errors.join('; ')}`);
  if (m.total !== expectedTotal) throw new Error(`the page's flame graph holds ${m.total} samples, expected ${expectedTotal}`);
  firstPaint.push(m.fp);
  firstFrame.push(m.ff);
  interactive.push(m.ready);
  console.error(`run ${r + 1}: first-paint ${m.fp.toFixed(0)} ms, first-frame ${m.ff.toFixed(0)} ms, interactive ${m.ready.toFixed(0)} ms`);
  // Responsiveness on the full tree: a zoom (with the function table's
  // update), a search over every frame, and Esc back to the root.
  const ops = await page.evaluate(() => {
    const fg = window.keisoku.flame;
    const t = fg.tree;
    let n = 0;
    for (let d = 0; d < 3; d++) {
      let best = -1;
      for (let k = t.childStart[n]; k < t.childStart[n + 1]; k++) if (best < 0 || t.total[t.childList[k]] > t.total[best]) best = t.childList[k];
      if (best < 0) break;
      n = best;
    }
    const time = (f) => {
      const t0 = performance.now();
      f();
      return Math.round(performance.now() - t0);
    };
    return {
      zoom: time(() => fg.zoomTo(n)),
      search: time(() => fg.search('malloc|memcpy|_parse')),
      reset: time(() => fg.reset()),
    };
  });
  // The views of the flame page on the full tree: left heavy and back, the
  // sandwich of a shared helper and back, and time order (which a
  // million samples whose stacks change at every sample exceed: the time
  // until the page says so is what is measured then).
  const views = entry !== 'flame' ? null : await page.evaluate(() => {
    const fg = window.keisoku.flame;
    const v = window.keisoku.views;
    if (!v) return null;
    const time = (f) => {
      const t0 = performance.now();
      try {
        f();
        return Math.round(performance.now() - t0);
      } catch (e) {
        return `refused after ${Math.round(performance.now() - t0)} ms: ${e.message}`;
      }
    };
    return {
      left_heavy: time(() => fg.setMode('left-heavy')),
      merged: time(() => fg.setMode('merged')),
      sandwich: time(() => v.showSandwich('malloc')),
      flame_tab: time(() => v.showFlame()),
      time_order: time(() => fg.setMode('time-order')),
    };
  });
  if (views) {
    viewOps.push(views);
    console.error(`run ${r + 1}: views ${JSON.stringify(views)} (ms)`);
  }
  zooms.push(ops.zoom);
  searches.push(ops.search);
  resets.push(ops.reset);
  console.error(`run ${r + 1}: zoom ${ops.zoom} ms, search ${ops.search} ms, reset ${ops.reset} ms`);
  if (r === 0) await page.screenshot({ path: join(dir, 'flame-paint.png') });
  await ctx.close();
  // Alternate with the peers in the same run.
  for (const p of peers) {
    // A peer that timed out once is not retried (a 240 MB SVG takes minutes).
    if (p.load.includes(Infinity)) continue;
    const c = await browser.newContext({ viewport: { width: 1366, height: 900 } });
    const pg = await c.newPage();
    try {
      await pg.goto(pathToFileURL(p.svg).href, { waitUntil: 'load', timeout: PEER_TIMEOUT_MS });
      const ms = await pg.evaluate(() => new Promise((res) => requestAnimationFrame(() => requestAnimationFrame(() => res(performance.now())))));
      p.load.push(Math.round(ms));
      console.error(`run ${r + 1}: ${p.label} loaded and painted ${Math.round(ms)} ms`);
    } catch {
      p.load.push(Infinity);
      console.error(`run ${r + 1}: ${p.label} not loaded within ${PEER_TIMEOUT_MS} ms`);
    }
    await c.close();
  }
}
await browser.close();
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const out = { page: entry, form: via === 'binary' ? 'binary' : form, load_average: (await import('node:os')).loadavg().map((x) => Number(x.toFixed(1))), samples, distinct_frames: distinct, stack_nodes: profile.nodes.parent.length, page_mb: Number(mb.toFixed(1)), via, embedding, runs, first_paint_ms_median: Math.round(median(firstPaint)), first_frame_ms_median: Math.round(median(firstFrame)), interactive_ms_median: Math.round(median(interactive)), zoom_ms_median: median(zooms), search_ms_median: median(searches), reset_ms_median: median(resets), first_paint_ms: firstPaint.map(Math.round), interactive_ms: interactive.map(Math.round) };
if (viewOps.length) {
  for (const k of Object.keys(viewOps[0])) {
    const ms = viewOps.map((o) => o[k]).filter((v) => typeof v === 'number');
    const refused = viewOps.map((o) => o[k]).filter((v) => typeof v === 'string');
    if (ms.length) out[`${k}_ms_median`] = median(ms);
    if (refused.length) out[`${k}_refused`] = refused;
  }
}
for (const p of peers) {
  const m = p.load.includes(Infinity) ? `>${PEER_TIMEOUT_MS}` : median(p.load);
  out[`${p.label}_mb`] = Number(p.mb.toFixed(1));
  if (typeof m === 'string') {
    out[`${p.label}_painted_ms_median`] = m;
    continue;
  }
  out[`${p.label}_painted_ms_median`] = m;
  out[`${p.label}_vs_keisoku_first_paint`] = Number((m / out.first_paint_ms_median).toFixed(2));
  out[`${p.label}_vs_keisoku_interactive`] = Number((m / out.interactive_ms_median).toFixed(2));
}
console.log(JSON.stringify(out));
