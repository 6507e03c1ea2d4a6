// Time until a flame graph HTML page of 1,000,000 samples (100,000+
// distinct frames) is first painted in headless Chromium.
//
//   node bench/flame-paint.mjs [--samples N] [--frames N] [--runs N] [--via template|binary]
//
// Two numbers per run, both from the page's own clock (ms since navigation):
//   first-paint  the `keisoku:first-paint` mark, emitted right after the
//                flame graph's first canvas draw;
//   interactive  a double requestAnimationFrame after the page script
//                finished (function table and legend built, frame shown).
// The page comes from `keisoku flame` when --via binary (KEISOKU_BIN) and
// otherwise from the same template crates/report uses, with per-sample data
// (time and thread per sample: the heavier form, as `scope` pages embed).
import { writeFileSync, statSync } from 'node:fs';
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

const dir = scratch('flame-paint');
const t0 = Date.now();
const profile = syntheticProfile({ samples, frames, seconds: 300, threads: 8, seed: 42 });
const distinct = new Set(profile.frames.name).size;
console.error(`generated ${samples} samples, ${distinct} distinct frames, ${profile.nodes.parent.length} stack nodes in ${Date.now() - t0} ms`);

let html = join(dir, `flame-${samples}.html`);
if (via === 'binary') {
  if (!keisokuBin()) throw new Error('--via binary needs KEISOKU_BIN');
  const folded = join(dir, `flame-${samples}.folded`);
  writeFileSync(folded, toFolded(profile));
  runBin(['flame', folded, '-o', html]);
} else {
  writeFileSync(html, templatePage(profile.title, 'flame', JSON.stringify({ title: profile.title, view: {}, profile })));
}
const mb = statSync(html).size / 1e6;
console.error(`page: ${html} (${mb.toFixed(1)} MB, via ${via})`);

const browser = await launch();
const firstPaint = [];
const interactive = [];
for (let r = 0; r < runs; r++) {
  const { page, errors, ctx } = await open(browser, html);
  const m = await page.evaluate(
    () =>
      new Promise((resolve) => {
        requestAnimationFrame(() =>
          requestAnimationFrame(() => {
            const mark = performance.getEntriesByName('keisoku:first-paint')[0];
            resolve({ fp: mark ? mark.startTime : NaN, ready: performance.now() });
          }),
        );
      }),
  );
  if (errors.length) throw new Error(`page errors: ${errors.join('; ')}`);
  firstPaint.push(m.fp);
  interactive.push(m.ready);
  console.error(`run ${r + 1}: first-paint ${m.fp.toFixed(0)} ms, interactive ${m.ready.toFixed(0)} ms`);
  if (r === 0) await page.screenshot({ path: join(dir, 'flame-paint.png') });
  await ctx.close();
}
await browser.close();
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const out = { samples, distinct_frames: distinct, stack_nodes: profile.nodes.parent.length, page_mb: Number(mb.toFixed(1)), via, runs, first_paint_ms_median: Math.round(median(firstPaint)), interactive_ms_median: Math.round(median(interactive)), first_paint_ms: firstPaint.map(Math.round), interactive_ms: interactive.map(Math.round) };
console.log(JSON.stringify(out));
