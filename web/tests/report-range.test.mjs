// One time range drives the report (issue 13): a range in the URL reopens
// it; route tables and verdict tiles are recomputed for the range from
// route_seconds' per-second histograms; a second range shift+dragged on the
// heat map shows the differential flame graph of B against A with exact
// range labels.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { pathToFileURL } from 'node:url';
import { launch, open, shot } from './helpers/browser.mjs';
import { makeRun } from './report-fixture.mjs';
import { reportPage } from './report-page.mjs';

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

/** Contract 3's bucket of a latency in µs (floor(8 * log2(us))), written out here, not imported. */
const bucket = (us) => (us < 1 ? 0 : Math.floor(8 * Math.log2(us)));

// Two routes with per-second data: /fast every second, /slow only in the
// second half, where it also fails.
const run = makeRun({ samples: 20000 });
const secs = Array.from({ length: 60 }, (_, i) => (i + 1) * 1000);
const fast = { method: 'GET', route: '/fast', t_ms: secs, count: secs.map(() => 100), errors: secs.map(() => 0), p50_ms: secs.map(() => 2), p99_ms: secs.map(() => 4), max_ms: secs.map(() => 5), hist: secs.map(() => [[bucket(2000), 98], [bucket(4000), 2]]) };
const slowT = secs.filter((t) => t > 30000);
const slow = { method: 'POST', route: '/slow', t_ms: slowT, count: slowT.map(() => 10), errors: slowT.map(() => 1), p50_ms: slowT.map(() => 50), p99_ms: slowT.map((t) => (t > 45000 ? 400 : 60)), max_ms: slowT.map(() => 500), hist: slowT.map(() => [[bucket(50000), 9], [bucket(400000), 1]]) };
run.route_seconds = { client: [fast, slow] };
const html = reportPage('report-range', run);

test('a range in the URL reopens it, and routes and tiles are recomputed for it', async () => {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  await page.goto(`${pathToFileURL(html).href}#from=10000&to=20000`);
  await page.waitForFunction(() => window.keisoku !== undefined || document.querySelector('.ks-fatal'));
  const got = await page.evaluate(() => ({
    range: window.keisoku.range(),
    x: window.keisoku.timelines.charts[0].scales.x,
    rows: [...document.querySelectorAll('#routes tbody tr')].map((tr) => [...tr.children].map((td) => td.textContent)),
    head: [...document.querySelectorAll('#routes thead th')].map((th) => th.textContent.replace(/ [▼▲]$/, '')),
    requests: [...document.querySelectorAll('#verdict .ks-stat')].find((s) => s.querySelector('.ks-stat-label').textContent === 'requests')?.querySelector('.ks-stat-value').textContent,
    note: document.querySelector('.ks-tiles-note')?.textContent ?? '',
  }));
  assert.deepEqual(got.range, { fromMs: 10000, toMs: 20000 });
  assert.ok(Math.abs(got.x.min - 10) < 1e-9 && Math.abs(got.x.max - 20) < 1e-9, JSON.stringify(got.x));
  // Seconds ending at 11 s .. 20 s lie inside [10 s, 20 s): 10 of /fast, none of /slow.
  const count = got.head.indexOf('count');
  assert.deepEqual(got.rows.map((r) => [r[1], r[count]]), [['/fast', '1,000']]);
  assert.equal(got.requests, '1,000');
  assert.match(got.note, /selected range/);

  // A drag on a timeline moves the URL with it; Esc clears both.
  await page.evaluate(() => window.keisoku.timelines.setRange(null));
  const chart = page.locator('#timelines .ks-chart[data-key="rps"] .u-over');
  await chart.scrollIntoViewIfNeeded();
  const b = await chart.boundingBox();
  await page.mouse.move(b.x + b.width * 0.6, b.y + b.height / 2);
  await page.mouse.down();
  await page.mouse.move(b.x + b.width * 0.9, b.y + b.height / 2, { steps: 6 });
  await page.mouse.up();
  const dragged = await page.evaluate(() => ({ hash: location.hash, range: window.keisoku.range(), rows: [...document.querySelectorAll('#routes tbody tr td:nth-child(2)')].map((td) => td.textContent) }));
  const m = /^#from=(\d+)&to=(\d+)$/.exec(dragged.hash);
  assert.ok(m, dragged.hash);
  assert.deepEqual([+m[1], +m[2]], [Math.round(dragged.range.fromMs), Math.round(dragged.range.toMs)]);
  assert.ok(dragged.rows.includes('/slow'), `the second half has /slow: ${dragged.rows}`);
  await page.keyboard.press('Escape');
  assert.equal(await page.evaluate(() => location.hash), '');
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('the per-route p99 chart names the route whose p99 rose first', async () => {
  const { page, errors, ctx } = await open(browser, html, { width: 1280, height: 800 });
  const lead = await page.evaluate(() => document.querySelector('#timelines .ks-chart[data-key="route-p99"] .ks-chart-lead')?.textContent ?? null);
  // /slow: baseline 60 ms over its first seconds, 400 ms from 46 s on.
  assert.match(lead ?? '', /^First p99 rise: POST \/slow at 46 s \(p99 60 ms → up to 400 ms\)/);
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('shift+drag on the heat map shows B against A as a differential flame graph with exact labels', async () => {
  const { page, errors, ctx } = await open(browser, html, { width: 1366, height: 900 });
  const drag = async (c0, c1, shift) => {
    const r = await page.evaluate(([c0, c1]) => {
      const hm = window.keisoku.profile.heat;
      hm.element.scrollIntoView();
      return { box: hm.element.getBoundingClientRect().toJSON(), a: hm.cellRect(c0, 0), b: hm.cellRect(c1, hm.rows - 1) };
    }, [c0, c1]);
    if (shift) await page.keyboard.down('Shift');
    await page.mouse.move(r.box.x + r.a.x + 2, r.box.y + r.a.y + 2);
    await page.mouse.down();
    await page.mouse.move(r.box.x + r.b.x + r.b.w - 2, r.box.y + r.b.y + r.b.h - 2, { steps: 6 });
    await page.mouse.up();
    if (shift) await page.keyboard.up('Shift');
  };
  await drag(5, 9, false);
  await drag(25, 26, true);
  const got = await page.evaluate(() => {
    const p = window.keisoku.profile;
    const sel = p.heat.selections();
    return {
      sel,
      diff: !!p.diff?.isDiff,
      title: document.querySelector('#profile h3:nth-of-type(2)')?.textContent ?? '',
      countA: p.heat.samplesIn(sel.a[0], sel.a[1]),
      countB: p.heat.samplesIn(sel.b[0], sel.b[1]),
      info: document.querySelector('#profile .ks-heat-info')?.textContent ?? '',
    };
  });
  assert.deepEqual(got.sel, { a: [5000, 10000], b: [25000, 27000] });
  assert.ok(got.diff, 'a differential flame graph is shown');
  const n = (x) => x.toLocaleString('en-US');
  assert.ok(got.title.includes(`B 25 s – 27 s (${n(got.countB)} samples) against A 5 s – 10 s (${n(got.countA)} samples)`), got.title);
  assert.ok(got.info.includes(`B: 25 s – 27 s (${n(got.countB)} samples)`), got.info);
  // The counts are the JSON's samples with from <= t < to, idle stacks left
  // out as the heat map shows them (which nodes are idle: the page's rule).
  const idle = await page.evaluate(() => Array.from(window.keisoku.profile.profile.idleNodes(), (x) => (x ? 1 : 0)));
  const within = (a, b) => run.profile.samples.time_ms.filter((t, i) => t >= a && t < b && !idle[run.profile.samples.node[i]]).length;
  assert.equal(got.countA, within(5000, 10000));
  assert.equal(got.countB, within(25000, 27000));
  await shot(page, 'report-heat-ab');
  // A plain drag again goes back to the plain graph.
  await drag(5, 9, false);
  assert.equal(await page.evaluate(() => window.keisoku.profile.diff), null);
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('a top finding on the first screen selects its range and zooms the flame graph to its frame', async () => {
  const { page, errors, ctx } = await open(browser, html, { width: 1280, height: 800 });
  const stall = run.findings.find((f) => f.id === 'stall');
  const item = page.locator('.ks-top-finding', { hasText: stall.title });
  const box = await item.boundingBox();
  assert.ok(box && box.y + box.height <= 800, `the finding is on the first screen: ${JSON.stringify(box)}`);
  await item.click();
  const got = await page.evaluate(() => ({ range: window.keisoku.range(), stats: window.keisoku.profile.flame.stats(), hash: location.hash }));
  assert.deepEqual([got.range.fromMs, got.range.toMs], stall.evidence.range_ms);
  assert.equal(got.hash, `#from=${Math.round(stall.evidence.range_ms[0])}&to=${Math.round(stall.evidence.range_ms[1])}`);
  assert.ok(got.stats.matched && got.stats.matched.zoom > 0, `its frame is highlighted: ${JSON.stringify(got.stats.matched)}`);
  // Zoomed to the frame's caller: the path ends one above the finding's frame.
  assert.notEqual(got.stats.zoomNode, 0, 'zoomed');
  assert.ok(got.stats.zoomTotal < got.stats.total, 'the zoomed view is part of the graph');
  assert.deepEqual(errors, []);
  await ctx.close();
});
