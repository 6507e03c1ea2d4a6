// Browser tests of the subsecond heat map page (`keisoku scope` HTML):
// cells count the data, dragging selects a range whose flame graph has
// exactly the samples of that range, a second range gives a diff.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, open, shot, embeddedProfile } from './helpers/browser.mjs';
import { scopePage } from './helpers/pages.mjs';
import { syntheticProfile, weightWhere, forEachStack } from './helpers/profiles.mjs';

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const fixture = syntheticProfile({ samples: 40000, frames: 500, seconds: 8, threads: 3, seed: 11 });

async function cellCenter(page, col, row) {
  const r = await page.evaluate(([c, w]) => window.keisoku.heat.cellRect(c, w), [col, row]);
  const box = await page.locator('.ks-heat-canvas').boundingBox();
  return { x: box.x + r.x + r.w / 2, y: box.y + r.y + r.h / 2 };
}

async function drag(page, from, to, shift = false) {
  const a = await cellCenter(page, ...from);
  const b = await cellCenter(page, ...to);
  if (shift) await page.keyboard.down('Shift');
  await page.mouse.move(a.x, a.y);
  await page.mouse.down();
  await page.mouse.move((a.x + b.x) / 2, (a.y + b.y) / 2, { steps: 3 });
  await page.mouse.move(b.x, b.y, { steps: 3 });
  await page.mouse.up();
  if (shift) await page.keyboard.up('Shift');
}

test('heat map cells count the samples of each 1/rows second, idle excluded', async () => {
  const { html, via } = scopePage('scope-cells', fixture, 50);
  const { page, errors, ctx } = await open(browser, html);
  const data = embeddedProfile(html);
  const rows = await page.evaluate(() => window.keisoku.heat.rows);
  assert.equal(rows, 50);
  // Reference counts straight from the data.
  const ref = new Map();
  forEachStack(data, (names, _w, t) => {
    if (names.some((n) => n === 'cpu_idle')) return;
    const cell = Math.floor((t * rows) / 1000);
    ref.set(cell, (ref.get(cell) ?? 0) + 1);
  });
  for (const cell of [0, 7, 100, 101, 112, 349]) {
    const got = await page.evaluate(([c, r]) => window.keisoku.heat.count(c, r), [Math.floor(cell / rows), cell % rows]);
    assert.equal(got, ref.get(cell) ?? 0, `cell ${cell} (${via})`);
  }
  await shot(page, 'scope-cells');
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('dragging over cells shows the flame graph of exactly the samples in that range', async () => {
  const { html } = scopePage('scope-drag', fixture, 50);
  const { page, errors, ctx } = await open(browser, html);
  const data = embeddedProfile(html);
  await drag(page, [2, 0], [2, 14]);
  const sel = await page.evaluate(() => window.keisoku.heat.selections().a);
  assert.deepEqual(sel, [2000, 2300]);
  const st = await page.evaluate(() => window.keisoku.flame.stats());
  const expected = weightWhere(data, { from: 2000, to: 2300, idle: false });
  assert.ok(expected > 100, 'the burst second has samples');
  assert.equal(st.total, expected);
  // The .cpuprofile weighs time (issue 16): samples are counted apart.
  const count = weightWhere(data, { from: 2000, to: 2300, idle: false, count: true });
  assert.equal(st.samples, count);
  assert.match(await page.locator('.ks-scope-title').textContent(), new RegExp(`\\(${count.toLocaleString('en-US')} samples\\)`));
  // A drag across columns selects every cell between, in time order.
  await drag(page, [3, 40], [5, 10]);
  const sel2 = await page.evaluate(() => window.keisoku.heat.selections().a);
  assert.deepEqual(sel2, [3800, 5220]);
  assert.equal((await page.evaluate(() => window.keisoku.flame.stats())).total, weightWhere(data, { from: 3800, to: 5220, idle: false }));
  await shot(page, 'scope-drag');
  // Including idle adds the idle samples of the range.
  await page.check('.ks-scope-idle');
  assert.equal((await page.evaluate(() => window.keisoku.flame.stats())).total, weightWhere(data, { from: 3800, to: 5220 }));
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('shift+drag a second range shows the differential flame graph of A -> B', async () => {
  const { html } = scopePage('scope-diff', fixture, 50);
  const { page, errors, ctx } = await open(browser, html);
  const data = embeddedProfile(html);
  await drag(page, [2, 0], [2, 14]);
  await drag(page, [5, 0], [5, 49], true);
  const sel = await page.evaluate(() => window.keisoku.heat.selections());
  assert.deepEqual(sel, { a: [2000, 2300], b: [5000, 6000] });
  const d = await page.evaluate(() => {
    const dt = window.keisoku.diff.diffTree;
    return { before: dt.beforeSum, after: dt.afterSum, mode: dt.mode };
  });
  assert.equal(d.before, weightWhere(data, { from: 2000, to: 2300, idle: false }));
  assert.equal(d.after, weightWhere(data, { from: 5000, to: 6000, idle: false }));
  assert.equal(d.mode, 'normalized');
  assert.match(await page.locator('.ks-flame-legend').textContent(), /normalised/);
  await shot(page, 'scope-diff');
  // Esc goes back to the flame graph of all samples.
  await page.keyboard.press('Escape');
  assert.deepEqual(await page.evaluate(() => window.keisoku.heat.selections()), { a: null, b: null });
  assert.equal(await page.evaluate(() => window.keisoku.diff), null);
  assert.equal((await page.evaluate(() => window.keisoku.flame.stats())).total, weightWhere(data, { idle: false }));
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('thread filter applies to the heat map and the flame graph', async () => {
  const { html, via } = scopePage('scope-threads', fixture, 50);
  const { page, errors, ctx } = await open(browser, html);
  const data = embeddedProfile(html);
  if (!data.threads || data.threads.length < 2) {
    // .cpuprofile input has one thread; the component is covered by the JSON path.
    assert.equal(via, 'binary');
    await ctx.close();
    return;
  }
  await page.selectOption('.ks-thread-filter', 't:2');
  await drag(page, [1, 0], [3, 49]);
  const st = await page.evaluate(() => window.keisoku.flame.stats());
  assert.equal(st.total, weightWhere(data, { from: 1000, to: 4000, idle: false, threads: [2] }));
  assert.deepEqual(errors, []);
  await ctx.close();
});
