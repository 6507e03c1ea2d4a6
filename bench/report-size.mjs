// Size and first paint of the report of a 10-minute run sampled every
// second (~300 series) with 1,000,000 profile samples. Goal: < 25 MB and
// first paint < 2 s in headless Chromium. Usage (from the repo root):
//   node bench/report-size.mjs KEISOKU_BIN [REPS]
// Prints one JSON line per repetition and a summary with medians.
import { spawnSync } from 'node:child_process';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { makeRun } from '../web/tests/report-fixture.mjs';

const bin = resolve(process.argv[2] ?? 'target/debug/keisoku');
const reps = Number(process.argv[3] ?? 3);
const out = resolve('bench/out/report-size');
mkdirSync(out, { recursive: true });

const t0 = Date.now();
// 48 cores x (user, system, iowait, idle, per-process) + host/process/client series ~ 280 series.
const run = makeRun({ durationS: 600, intervalMs: 1000, cores: 48, samples: 1_000_000, extraFrames: 20000, seed: 7 });
const json = join(out, 'run.json');
writeFileSync(json, JSON.stringify(run));
const genMs = Date.now() - t0;
const html = join(out, 'report.html');
const w0 = Date.now();
const r = spawnSync(bin, ['report', json, '-o', html], { encoding: 'utf8' });
if (r.status !== 0) throw new Error(`keisoku report failed: ${r.stderr}`);
const writeMs = Date.now() - w0;
const bytes = statSync(html).size;
console.log(JSON.stringify({ series: run.series.length, samples: run.profile.samples.node.length, frames: run.profile.frames.name.length, run_json_bytes: statSync(json).size, report_bytes: bytes, report_mib: +(bytes / 2 ** 20).toFixed(2), generate_ms: genMs, keisoku_report_ms: writeMs }));

const { chromium } = await import('../web/node_modules/playwright-core/index.mjs');
const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
const results = [];
for (let i = 0; i < reps; i++) {
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args });
  const page = await browser.newPage({ viewport: { width: 1366, height: 768 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  await page.goto(pathToFileURL(html).href, { waitUntil: 'load', timeout: 120000 });
  await page.waitForFunction(() => window.keisoku !== undefined || document.querySelector('.ks-fatal'), null, { timeout: 120000 });
  const m = await page.evaluate(
    () =>
      new Promise((res) =>
        requestAnimationFrame(() =>
          requestAnimationFrame(() =>
            res({
              // The page's top (verdict, sweep, routes) has been painted.
              mark_ms: performance.getEntriesByName('keisoku:first-paint')[0]?.startTime ?? null,
              // Every section built: timelines, heat map, flame graph (1M samples) drawn.
              ready_ms: performance.getEntriesByName('keisoku:ready')[0]?.startTime ?? null,
              fcp_ms: performance.getEntriesByType('paint').find((p) => p.name === 'first-contentful-paint')?.startTime ?? null,
              // Two frames after everything was built: all of it has been painted.
              painted_ms: performance.now(),
              flame_total: window.keisoku?.profile?.flame?.stats().total ?? null,
            }),
          ),
        ),
      ),
  );
  m.errors = errors.length;
  results.push(m);
  console.log(JSON.stringify({ rep: i + 1, ...m }));
  await browser.close();
}
const med = (k) => {
  const v = results.map((x) => x[k]).filter((x) => typeof x === 'number').sort((a, b) => a - b);
  return v.length ? Math.round(v[Math.floor(v.length / 2)]) : null;
};
console.log(JSON.stringify({ summary: true, report_mib: +(bytes / 2 ** 20).toFixed(2), under_25mb: bytes < 25e6, median_first_paint_ms: med('mark_ms'), median_fcp_ms: med('fcp_ms'), median_ready_ms: med('ready_ms'), median_all_painted_ms: med('painted_ms'), first_paint_under_2s: med('mark_ms') < 2000 }));
