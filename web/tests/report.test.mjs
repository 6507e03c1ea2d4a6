// Browser tests of the run report (`keisoku report`): every section renders
// with data and no console errors; one time range drives every view (heat
// map drag => flame graph total = samples in range; timeline drag; finding
// click); search highlights; routes sort. Pages come from the real binary
// (a Run JSON file in docs/run-json.md's form as RUN), or from the same
// template when KEISOKU_BIN lacks `report`. The first test records a REAL run
// (`keisoku run` against the demo target, perf profile) and checks it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { launch, open, runBin, shot } from './helpers/browser.mjs';
import { makeRun } from './report-fixture.mjs';
import { reportPage } from './report-page.mjs';
import { has, killAll, recordDemoRun } from './report-procs.mjs';

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
  killAll();
});

/** Samples with from <= t < to, computed from the JSON, not by the UI. */
function samplesIn(profile, from, to) {
  return profile.samples.time_ms.filter((t) => t >= from && t < to).length;
}

/** Samples whose stack contains a frame named `name`. */
function samplesWith(profile, name) {
  const { parent, frame } = profile.nodes;
  const has = new Uint8Array(parent.length);
  for (let n = 0; n < parent.length; n++) has[n] = (profile.frames.name[frame[n]] === name ? 1 : 0) | (parent[n] >= 0 ? has[parent[n]] : 0);
  return profile.samples.node.filter((n) => has[n]).length;
}

test('the report of a real recorded run shows every section with data', async (t) => {
  if (!has('run', '--target') || !has('demo', '--serve')) {
    t.skip('KEISOKU_BIN lacks `run` or `demo --serve`');
    return;
  }
  const { rec, store, dir } = await recordDemoRun('report-real', '/health', ['--profile', 'perf', '--sweep-connections', '1..3:1', '--step-duration', '1s', '--slo', 'p99<=50ms']);
  assert.ok(rec.status === 0 || rec.status === 3, `keisoku run: ${rec.stderr}`);
  const html = join(dir, 'report-real.html');
  runBin(['report', 'report-real', '--store', store, '-o', html]);
  const { page, errors, ctx } = await open(browser, html, { width: 1366, height: 768 });
  const facts = await page.evaluate(() => ({
    fatal: document.querySelector('.ks-fatal')?.textContent ?? null,
    stats: [...document.querySelectorAll('#verdict .ks-stat-value')].map((e) => e.textContent),
    clauses: document.querySelectorAll('#verdict table.ks-slo tbody tr').length,
    sweepPoints: window.keisoku.run.results?.phases?.length ?? 0,
    sweeps: document.querySelectorAll('#sweep canvas').length,
    routes: document.querySelectorAll('#routes tbody tr').length,
    charts: [...document.querySelectorAll('#timelines .ks-chart')].map((c) => c.getAttribute('data-key')),
    samples: window.keisoku.profile.profile?.sampleCount ?? null,
    flame: window.keisoku.profile.flame?.stats().total ?? null,
    findings: !!document.querySelector('#findings'),
  }));
  assert.equal(facts.fatal, null);
  assert.equal(facts.stats.length, 8, `${facts.stats}`);
  assert.notEqual(facts.stats[0], '—', 'throughput measured');
  assert.equal(facts.clauses, 1);
  assert.equal(facts.sweepPoints, 3);
  assert.ok(facts.sweeps >= 2);
  assert.ok(facts.routes >= 1, 'client routes');
  for (const key of ['rps', 'latency', 'cpu', 'sched', 'proc-cpu', 'proc-sw']) assert.ok(facts.charts.includes(key), `chart ${key}: ${facts.charts}`);
  if (facts.samples !== null) assert.equal(facts.flame, facts.samples, 'the flame graph holds every sample');
  else t.diagnostic('perf gave no profile on this machine: the profile section shows its empty state');
  assert.ok(facts.findings);
  await shot(page, 'report-real');
  assert.deepEqual(errors, []);
  await ctx.close();
});

const run = makeRun({ samples: 20000 });
const html = reportPage('report-synthetic', run);

test('every section renders with data and no console errors (light and dark)', async () => {
  for (const colorScheme of ['light', 'dark']) {
    const { page, errors, ctx } = await open(browser, html, { width: 1366, height: 768, colorScheme });
    const facts = await page.evaluate(() => ({
      stats: document.querySelectorAll('#verdict .ks-stat').length,
      clauses: document.querySelectorAll('#verdict table.ks-slo tbody tr').length,
      knee: document.querySelector('#verdict .ks-knee')?.textContent ?? '',
      sweeps: document.querySelectorAll('#sweep canvas').length,
      routes: document.querySelectorAll('#routes tbody tr').length,
      charts: document.querySelectorAll('#timelines .ks-chart').length,
      strips: [...document.querySelectorAll('#timelines .ks-chart')].map((c) => c.getAttribute('data-key')),
      heat: !!document.querySelector('#profile .ks-heat-canvas'),
      flame: !!document.querySelector('#profile .ks-flame-canvas'),
      findings: document.querySelectorAll('#findings .ks-finding').length,
      axisLabels: window.keisoku.timelines.charts.flatMap((u) => u.axes.map((a) => a.label)),
      fatal: document.querySelector('.ks-fatal')?.textContent ?? null,
    }));
    assert.equal(facts.fatal, null);
    assert.equal(facts.stats, 8);
    assert.equal(facts.clauses, 3);
    assert.match(facts.knee, /c=4/);
    assert.ok(facts.sweeps >= 2, 'two sweep charts');
    assert.equal(facts.routes, 3);
    assert.ok(facts.charts >= 12, `timelines: ${facts.strips}`);
    for (const key of ['rps', 'latency', 'cpu', 'sched', 'paging', 'pagecache', 'disk', 'net', 'proc-cpu', 'proc-sw', 'proc-core']) assert.ok(facts.strips.includes(key), `chart ${key} missing: ${facts.strips}`);
    assert.ok(facts.heat && facts.flame);
    assert.equal(facts.findings, 2);
    // Units on every axis: each chart labels its time axis and value axes (uPlot draws them on canvas).
    assert.ok(facts.axisLabels.includes('time since start (s)'));
    for (const unit of ['req/s', 'ms', '%', 'KiB/s', 'bytes', 'IOPS', 'bytes/s', 'core']) assert.ok(facts.axisLabels.includes(unit), `axis ${unit}: ${facts.axisLabels}`);
    await shot(page, `report-${colorScheme}`);
    assert.deepEqual(errors, []);
    await ctx.close();
  }
});

test('dragging on the heat map redraws the flame graph from exactly the samples in range', async () => {
  const { page, errors, ctx } = await open(browser, html, { width: 1366, height: 900 });
  const rect = await page.evaluate(() => {
    const hm = window.keisoku.profile.heat;
    const c = hm.element.getBoundingClientRect();
    const a = hm.cellRect(20, 0);
    const b = hm.cellRect(29, hm.rows - 1);
    hm.element.scrollIntoView();
    return { c: { x: c.x, y: c.y }, a, b };
  });
  const box = await page.evaluate(() => window.keisoku.profile.heat.element.getBoundingClientRect().toJSON());
  await page.mouse.move(box.x + rect.a.x + 2, box.y + rect.a.y + 2);
  await page.mouse.down();
  await page.mouse.move(box.x + rect.b.x + rect.b.w - 2, box.y + rect.b.y + rect.b.h - 2, { steps: 8 });
  await page.mouse.up();
  const got = await page.evaluate(() => {
    const k = window.keisoku;
    return { sel: k.profile.heat.selections().a, stats: k.profile.flame.stats(), range: k.range(), x: k.timelines.charts[0].scales.x };
  });
  assert.ok(got.sel, 'heat map has a selection');
  const [from, to] = got.sel;
  assert.ok(from >= 19000 && from <= 21000 && to >= 29000 && to <= 31000, `selection ${from}..${to}`);
  const want = samplesIn(run.profile, from, to);
  assert.ok(want > 0 && want < run.profile.samples.node.length);
  assert.equal(got.stats.total, want, 'flame graph total = samples in range');
  // The timelines followed (profile clock = run clock in this fixture).
  assert.ok(Math.abs(got.x.min - from / 1000) < 1e-6 && Math.abs(got.x.max - to / 1000) < 1e-6, JSON.stringify(got.x));
  assert.deepEqual([got.range.fromMs, got.range.toMs], [from, to]);
  await shot(page, 'report-heat-drag');
  // Esc resets every view.
  await page.keyboard.press('Escape');
  const reset = await page.evaluate(() => ({ stats: window.keisoku.profile.flame.stats(), range: window.keisoku.range(), sel: window.keisoku.profile.heat.selections().a }));
  assert.equal(reset.stats.total, run.profile.samples.node.length);
  assert.equal(reset.range, null);
  assert.equal(reset.sel, null);
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('dragging on a timeline zooms every chart and re-flames the range', async () => {
  const { page, errors, ctx } = await open(browser, html, { width: 1366, height: 900 });
  const chart = page.locator('#timelines .ks-chart[data-key="latency"] .u-over');
  await chart.scrollIntoViewIfNeeded();
  const b = await chart.boundingBox();
  await page.mouse.move(b.x + b.width * 0.25, b.y + b.height / 2);
  await page.mouse.down();
  await page.mouse.move(b.x + b.width * 0.5, b.y + b.height / 2, { steps: 6 });
  await page.mouse.up();
  const got = await page.evaluate(() => {
    const k = window.keisoku;
    return { range: k.range(), scales: k.timelines.charts.map((u) => [u.scales.x.min, u.scales.x.max]), total: k.profile.flame.stats().total, sel: k.profile.heat.selections().a };
  });
  assert.ok(got.range, 'a range is selected');
  const { fromMs, toMs } = got.range;
  assert.ok(fromMs > 10000 && fromMs < 20000 && toMs > 25000 && toMs < 35000, `${fromMs}..${toMs}`);
  for (const [min, max] of got.scales) assert.ok(Math.abs(min - fromMs / 1000) < 1e-6 && Math.abs(max - toMs / 1000) < 1e-6);
  assert.equal(got.total, samplesIn(run.profile, fromMs, toMs));
  assert.deepEqual(got.sel, [fromMs, toMs]);
  // Hovering shows a tooltip with exact values.
  await page.mouse.move(b.x + b.width * 0.4, b.y + b.height / 2);
  const tip = await page.locator('#timelines .ks-chart[data-key="latency"] .ks-chart-tip').textContent();
  assert.match(tip, /t = .*client\.p99_ms.*ms/s);
  await shot(page, 'report-timeline-drag');
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('search highlights frames and reports their share; a finding selects its range and frames', async () => {
  const { page, errors, ctx } = await open(browser, html, { width: 1366, height: 900 });
  await page.keyboard.press('/');
  await page.keyboard.type('^json_parse$');
  await page.keyboard.press('Enter');
  const matched = await page.evaluate(() => window.keisoku.profile.flame.stats().matched);
  assert.ok(matched, 'search matched');
  const want = samplesWith(run.profile, 'json_parse');
  assert.equal(matched.all, want, JSON.stringify(matched));
  assert.ok(matched.nodes > 0, "frames highlighted");
  await page.keyboard.press('Escape');

  const stall = run.findings[0];
  await page.locator('#findings .ks-finding', { hasText: 'Subsecond stall' }).click();
  const got = await page.evaluate(() => ({ range: window.keisoku.range(), stats: window.keisoku.profile.flame.stats() }));
  assert.deepEqual([got.range.fromMs, got.range.toMs], stall.evidence.range_ms);
  assert.equal(got.stats.total, samplesIn(run.profile, ...stall.evidence.range_ms));
  assert.ok(got.stats.matched, 'the finding highlighted its frames');
  await shot(page, 'report-finding');
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('routes sort by any column and filter', async () => {
  const { page, errors, ctx } = await open(browser, html);
  const firstUri = () => page.locator('#routes tbody tr:first-child td:nth-child(2)').textContent();
  assert.equal(await firstUri(), '/bid', 'sorted by sum, largest first');
  await page.locator('#routes th[data-key="avg"]').click();
  assert.equal(await firstUri(), '/campaigns/:id', 'slowest route first');
  await page.locator('#routes th[data-key="avg"]').click();
  assert.equal(await firstUri(), '/health', 'reversed');
  await page.locator('#routes input[type="search"]').fill('camp');
  assert.equal(await page.locator('#routes tbody tr').count(), 1);
  await page.locator('#routes button[data-source="access log"]').click();
  assert.equal(await page.locator('#routes tbody tr').count(), 1, 'filter kept across tabs');
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('a run without load, profile or findings says what is missing instead of failing', async () => {
  const bare = makeRun({ samples: 0, findings: false, accessLog: false });
  delete bare.results;
  bare.routes = { client: [], access_log: [] };
  bare.series = bare.series.filter((s) => s.name.startsWith('cpu.'));
  const p = reportPage('report-bare', bare);
  const { page, errors, ctx } = await open(browser, p);
  const empties = await page.locator('.ks-empty').allTextContents();
  assert.ok(empties.some((t) => /No sweep/.test(t)));
  assert.ok(empties.some((t) => /No per-route data/.test(t)));
  assert.ok(empties.some((t) => /No profile recorded/.test(t)));
  assert.ok(empties.some((t) => /No findings/.test(t)));
  assert.ok(await page.locator('#timelines .ks-chart[data-key="cpu"]').count());
  await shot(page, 'report-bare');
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('a profile with one stray sample time keeps its heat map to a day and says so', async () => {
  const stray = makeRun({ samples: 2000, findings: false });
  // One sample 30 years after the rest (a perf clock glitch): a column per
  // second up to it would be 10^9 columns.
  const times = stray.profile.samples.time_ms;
  times[times.length - 1] = 1e12;
  const p = reportPage('report-stray-time', stray);
  const { page, errors, ctx } = await open(browser, p);
  const facts = await page.evaluate(() => ({
    fatal: document.querySelector('.ks-fatal')?.textContent ?? null,
    heat: !!document.querySelector('#profile .ks-heat-canvas'),
    info: document.querySelector('#profile .ks-heat-info')?.textContent ?? '',
  }));
  assert.equal(facts.fatal, null);
  assert.ok(facts.heat, 'the heat map is drawn');
  assert.match(facts.info, /later than 86,400 s are not shown/);
  assert.deepEqual(errors, []);
  await ctx.close();
});
