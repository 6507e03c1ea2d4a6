// `keisoku serve` in a browser, over runs REALLY recorded on this machine:
// the demo target loaded by `keisoku bench` under `keisoku record` (host,
// process and, when perf works, a profile). The list shows the runs, a run
// opens its report with data in every recorded section, two runs compare,
// and bad requests get 4xx messages while the server keeps serving.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { keisokuBin, launch, scratch, shot } from './helpers/browser.mjs';
import { has, killAll, startAndMatch, startDemo, stop } from './report-procs.mjs';

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
  killAll();
});

test('serve lists real recorded runs, opens a report, compares two, refuses bad requests', async (t) => {
  assert.ok(has('serve', '--addr'), 'KEISOKU_BIN must point at a keisoku with `serve`');
  if (!has('record', '--pid') || !has('demo', '--serve')) {
    t.skip('KEISOKU_BIN lacks serve/record/demo');
    return;
  }
  const dir = scratch('serve');
  const store = join(dir, 'runs.db');
  rmSync(store, { force: true });
  rmSync(`${store}-wal`, { force: true });
  rmSync(`${store}-shm`, { force: true });

  const { child: demo, url, pid } = await startDemo();
  for (const name of ['before', 'after']) {
    const r = spawnSync(keisokuBin(), ['record', '--pid', pid, '--profile', 'perf', '--store', store, '--name', name, '--', keisokuBin(), 'bench', '-c', '4', '-d', '2s', `${url}/health`], { encoding: 'utf8', timeout: 60000 });
    assert.equal(r.status, 0, `record ${name}: ${r.stderr}`);
  }
  await stop(demo);

  const { child: server, m: sm } = await startAndMatch(['serve', '--addr', '127.0.0.1:0', '--store', store], /(http:\/\/127\.0\.0\.1:\d+)\//);
  const base = sm[1];
  const ctx = await browser.newContext({ viewport: { width: 1366, height: 768 } });
  const page = await ctx.newPage();
  const errors = [];
  page.on('console', (msg) => msg.type() === 'error' && errors.push(msg.text()));
  page.on('pageerror', (e) => errors.push(String(e)));

  await page.goto(`${base}/`);
  const rows = page.locator('tr[data-run]');
  assert.equal(await rows.count(), 2);
  assert.match(await page.locator('tbody').textContent(), /before[\s\S]*|after/);
  await shot(page, 'serve-list');

  // Open the newest run's report.
  await rows.first().locator('a').click();
  await page.waitForFunction(() => window.keisoku !== undefined || document.querySelector('.ks-fatal'));
  const facts = await page.evaluate(() => ({
    fatal: document.querySelector('.ks-fatal')?.textContent ?? null,
    title: document.querySelector('h1')?.textContent ?? '',
    charts: [...document.querySelectorAll('#timelines .ks-chart')].map((c) => c.getAttribute('data-key')),
    back: !!document.querySelector('a[href="/"]'),
    samples: window.keisoku.profile.profile?.sampleCount ?? null,
    flame: window.keisoku.profile.flame?.stats().total ?? null,
  }));
  assert.equal(facts.fatal, null);
  assert.match(facts.title, /after/);
  assert.ok(facts.back, 'a link back to the run list');
  for (const key of ['cpu', 'sched', 'proc-cpu', 'proc-sw']) assert.ok(facts.charts.includes(key), `chart ${key}: ${facts.charts}`);
  if (facts.samples !== null) assert.equal(facts.flame, facts.samples, 'the flame graph holds every sample');
  else t.diagnostic('perf recorded no profile here; the profile section shows its empty state');
  await shot(page, 'serve-report');

  // Back to the list, tick both, compare.
  await page.goto(`${base}/`);
  const boxes = page.locator('tr[data-run] input[type="checkbox"]');
  await boxes.nth(1).check();
  await boxes.nth(0).check();
  await page.getByRole('button', { name: /compare/ }).click();
  await page.waitForFunction(() => window.keisoku !== undefined || document.querySelector('.ks-fatal'));
  const cmp = await page.evaluate(() => ({
    fatal: document.querySelector('.ks-fatal')?.textContent ?? null,
    title: document.querySelector('h1')?.textContent ?? '',
    gate: document.querySelector('#gate')?.textContent ?? '',
    diff: window.keisoku.flame?.isDiff ?? null,
  }));
  assert.equal(cmp.fatal, null);
  assert.match(cmp.title, /before.*→.*after/);
  assert.match(cmp.gate, /No gate given/);
  if (facts.samples !== null) assert.equal(cmp.diff, true, 'a differential flame graph');
  await shot(page, 'serve-compare');

  // Bad requests: 4xx with a message, and the server is still there.
  // A gate on runs recorded without load has nothing to judge: refused, not passed.
  const gated = await fetch(`${base}/compare?a=before&b=after&gate=${encodeURIComponent('p99>+10%')}`);
  assert.equal(gated.status, 422);
  assert.match(await gated.text(), /no p99 to gate on/);
  for (const [path, status] of [['/runs/no-such-run', 404], ['/runs/last?from=x&to=1', 400], ['/runs/last?from=0&to=1e12', 416], ['/compare?a=last', 400]]) {
    const r = await fetch(base + path);
    assert.equal(r.status, status, path);
    assert.ok((await r.text()).trim().length > 0);
  }
  assert.equal((await fetch(`${base}/api/runs`)).status, 200);
  assert.deepEqual(errors, []);
  await ctx.close();
  assert.equal(await stop(server), 0, 'Ctrl-C stops serve cleanly');
});
