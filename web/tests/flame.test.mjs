// Browser tests of the flame graph page (`keisoku flame` HTML): renders
// cleanly, zooms with breadcrumbs, search shares match the data, icicle,
// focus, hide, split, function table, keyboard.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, open, shot, embeddedProfile } from './helpers/browser.mjs';
import { flamePage, flamePageFromJson } from './helpers/pages.mjs';
import { syntheticProfile, weightWhere, stackNames, forEachStack } from './helpers/profiles.mjs';

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const fixture = syntheticProfile({ samples: 30000, frames: 600, seconds: 5, threads: 3, seed: 7 });

/** Largest-total child of the root frame path in the page's tree, as drawn. */
async function widestChild(page, parentNode) {
  return page.evaluate((p) => {
    const t = window.keisoku.flame.tree;
    let best = -1;
    for (let k = t.childStart[p]; k < t.childStart[p + 1]; k++) {
      const c = t.childList[k];
      if (best < 0 || t.total[c] > t.total[best]) best = c;
    }
    return best;
  }, parentNode);
}

async function canvasPoint(page, node) {
  const r = await page.evaluate((n) => window.keisoku.flame.frameRect(n), node);
  const box = await page.locator('.ks-flame-canvas').boundingBox();
  return { x: box.x + r.x + Math.min(r.w / 2, 40), y: box.y + r.y + r.h / 2, rect: r, box };
}

test('flame page renders the profile with no console errors, and totals match the data', async () => {
  const { html, via } = flamePage('flame-render', fixture);
  const { page, errors, ctx } = await open(browser, html);
  const data = embeddedProfile(html);
  const total = weightWhere(data);
  assert.equal(total, 30000, `fixture weight survives the ${via} path`);
  const st = await page.evaluate(() => window.keisoku.flame.stats());
  assert.equal(st.total, total);
  // Something was drawn: many non-background pixels on the canvas.
  const painted = await page.evaluate(() => {
    const c = document.querySelector('.ks-flame-canvas');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
    return n / (c.width * c.height);
  });
  assert.ok(painted > 0.05, `canvas mostly blank (${painted})`);
  assert.ok(await page.locator('.ks-functable-table tbody tr').count() > 10);
  assert.equal(await page.locator('.ks-flame-status').textContent(), `${total.toLocaleString('en-US')} samples in view`);
  await shot(page, 'flame-render');
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('clicking a frame zooms: breadcrumb appears, the frame spans the width, Back and Esc return', async () => {
  const { html } = flamePage('flame-zoom', fixture);
  const { page, errors, ctx } = await open(browser, html);
  const main = await widestChild(page, 0); // __libc_start_main
  const target = await widestChild(page, main); // main
  const deeper = await widestChild(page, target);
  const before = await page.evaluate((n) => window.keisoku.flame.frameRect(n), deeper);
  const { x, y, box } = await canvasPoint(page, deeper);
  assert.ok(before.w < box.width - 2, 'the frame is narrower than the view before zooming');
  await page.mouse.click(x, y);
  const after = await page.evaluate((n) => window.keisoku.flame.frameRect(n), deeper);
  assert.ok(Math.abs(after.w - box.width) < 1.5, `zoomed frame spans the width (${after.w} vs ${box.width})`);
  const crumbs = await page.locator('.ks-crumb').allTextContents();
  const name = await page.evaluate((n) => window.keisoku.flame.tree.name(n), deeper);
  assert.equal(crumbs[0], 'all');
  assert.ok(crumbs.at(-1).startsWith(name.slice(0, 20)), `breadcrumb ends with ${name}: ${crumbs}`);
  const st = await page.evaluate(() => window.keisoku.flame.stats());
  const data = embeddedProfile(html);
  const path = await page.evaluate((n) => window.keisoku.flame.tree.path(n).map((m) => window.keisoku.flame.tree.name(m)), deeper);
  assert.equal(st.zoomTotal, weightWhere(data, { prefix: path }), 'zoomed root weight = samples through that path');
  // Hover shows the tooltip with % of zoomed root.
  await page.mouse.move(x, y + 1);
  await page.waitForSelector('.ks-flame-tip', { state: 'visible' });
  const tip = await page.locator('.ks-flame-tip').textContent();
  assert.match(tip, /% of zoomed root\s*100/);
  await shot(page, 'flame-zoomed');
  await page.click('.ks-btn-back');
  assert.equal((await page.evaluate(() => window.keisoku.flame.stats())).zoomNode, 0);
  await page.mouse.click(x, y);
  await page.keyboard.press('Escape');
  assert.equal((await page.evaluate(() => window.keisoku.flame.stats())).zoomNode, 0);
  assert.equal(await page.locator('.ks-flame-crumbs').isHidden(), true);
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('search highlights matches and the matched shares equal the data, counting nested matches once', async () => {
  const { html } = flamePage('flame-search', fixture);
  const { page, errors, ctx } = await open(browser, html);
  const data = embeddedProfile(html);
  // malloc and memcpy appear nested under each other in some stacks: a
  // sample with both must count once.
  const re = 'malloc|memcpy|_parse';
  await page.keyboard.press('/');
  await page.keyboard.type(re);
  const st = await page.evaluate(() => window.keisoku.flame.stats());
  const expected = weightWhere(data, { match: new RegExp(re) });
  let nestedSamples = 0;
  forEachStack(data, (names, w) => {
    if (names.filter((n) => new RegExp(re).test(n)).length > 1) nestedSamples += w;
  });
  assert.ok(nestedSamples > 0, 'the fixture has stacks with nested matches');
  assert.equal(st.matched.all, expected);
  const status = await page.locator('.ks-flame-status').textContent();
  const pct = ((expected / weightWhere(data)) * 100).toFixed(1);
  assert.ok(status.includes(`matched ${pct}% of all`), `${status} shows ${pct}%`);
  // A matched frame is drawn in the highlight colour.
  const hit = await page.evaluate(() => {
    const fg = window.keisoku.flame;
    const t = fg.tree;
    let best = -1;
    for (let n = 1; n < t.n; n++) if (/malloc|memcpy|_parse/.test(t.name(n)) && (best < 0 || t.total[n] > t.total[best])) best = n;
    const r = fg.frameRect(best);
    const c = document.querySelector('.ks-flame-canvas');
    const dpr = c.width / c.clientWidth;
    const px = c.getContext('2d').getImageData(Math.floor((r.x + 1) * dpr), Math.floor((r.y + r.h / 2) * dpr), 1, 1).data;
    return [...px];
  });
  assert.deepEqual(hit.slice(0, 3), [230, 0, 230], 'matched frame filled with #e600e6');
  // Zoom into a path, then the view share is of the zoomed root.
  const main = await widestChild(page, 0);
  const target = await widestChild(page, main);
  const deeper = await widestChild(page, target);
  await page.evaluate((n) => window.keisoku.flame.zoomTo(n), deeper);
  const path = await page.evaluate((n) => window.keisoku.flame.tree.path(n).map((m) => window.keisoku.flame.tree.name(m)), deeper);
  const zst = await page.evaluate(() => window.keisoku.flame.stats());
  assert.equal(zst.matched.zoom, weightWhere(data, { prefix: path, match: new RegExp(re) }));
  assert.equal(zst.matched.all, expected, 'share of the whole is unchanged by zoom');
  // /body/flags syntax: case-insensitive search.
  const ci = await page.evaluate(() => window.keisoku.flame.search('/MALLOC/i').matched.all);
  assert.equal(ci, weightWhere(data, { match: /malloc/i }));
  await page.evaluate((r) => window.keisoku.flame.search(r), re);
  await shot(page, 'flame-search');
  await page.keyboard.press('Escape');
  assert.equal(await page.evaluate(() => window.keisoku.flame.stats().matched), null);
  assert.equal(await page.inputValue('.ks-flame-search'), '');
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('icicle toggle moves the root from the bottom to the top', async () => {
  const { html } = flamePage('flame-icicle', fixture);
  const { page, ctx } = await open(browser, html);
  const y0 = await page.evaluate(() => window.keisoku.flame.frameRect(0).y);
  assert.ok(y0 > 0, 'flame: root at the bottom');
  await page.click('.ks-btn-icicle');
  assert.equal(await page.evaluate(() => window.keisoku.flame.frameRect(0).y), 0);
  await shot(page, 'flame-icicle');
  await ctx.close();
});

test('function table: self ranking matches the data; selecting shows callers and callees; focus merges paths', async () => {
  const { html } = flamePage('flame-table', fixture);
  const { page, errors, ctx } = await open(browser, html);
  const data = embeddedProfile(html);
  const self = new Map();
  forEachStack(data, (names, w) => self.set(names.at(-1), (self.get(names.at(-1)) ?? 0) + w));
  const [topName, topSelf] = [...self].sort((a, b) => b[1] - a[1])[0];
  const first = page.locator('.ks-functable-table tbody tr').first();
  assert.equal(await first.locator('td.ks-name').textContent(), topName);
  assert.ok((await first.locator('td').first().textContent()).startsWith(topSelf.toLocaleString('en-US')));
  // Select a function with callers and callees.
  const fn = 'memcpy';
  await page.locator('.ks-functable-table td.ks-name', { hasText: new RegExp(`^${fn}$`) }).first().click();
  assert.equal((await page.locator('.ks-functable-selected').textContent()).startsWith(fn), true);
  assert.ok(await page.locator('.ks-callers tr').count() > 0);
  // Focus: the tree becomes the samples through memcpy, rooted at it.
  await page.locator('.ks-functable-selected button').click();
  const st = await page.evaluate(() => window.keisoku.flame.stats());
  assert.equal(st.total, weightWhere(data, { match: /^memcpy$/ }));
  const rootKids = await page.evaluate(() => {
    const t = window.keisoku.flame.tree;
    const out = [];
    for (let k = t.childStart[0]; k < t.childStart[1]; k++) out.push(t.name(t.childList[k]));
    return out;
  });
  assert.deepEqual(rootKids, [fn]);
  await shot(page, 'flame-focus');
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('hide regex removes frames; time range, thread filter and split by thread (from profile JSON with threads)', async () => {
  const { html } = flamePageFromJson('flame-filters', fixture);
  const { page, errors, ctx } = await open(browser, html);
  await page.fill('.ks-flame-hide', '^main$');
  await page.press('.ks-flame-hide', 'Enter');
  const names = await page.evaluate(() => {
    const t = window.keisoku.flame.tree;
    const s = new Set();
    for (let n = 0; n < t.n; n++) if (t.total[n] > 0) s.add(t.name(n));
    return [...s];
  });
  assert.ok(!names.includes('main'), 'main is hidden');
  assert.equal(await page.evaluate(() => window.keisoku.flame.stats().total), weightWhere(fixture));
  await page.fill('.ks-range-from', '1.5');
  await page.fill('.ks-range-to', '2.25');
  await page.press('.ks-range-to', 'Enter');
  assert.equal(await page.evaluate(() => window.keisoku.flame.stats().total), weightWhere(fixture, { from: 1500, to: 2250 }));
  await page.selectOption('.ks-thread-filter', 't:1');
  assert.equal(await page.evaluate(() => window.keisoku.flame.stats().total), weightWhere(fixture, { from: 1500, to: 2250, threads: [1] }));
  await page.selectOption('.ks-thread-filter', 'all');
  await page.selectOption('.ks-flame-split', 'thread');
  const groups = await page.evaluate(() => {
    const t = window.keisoku.flame.tree;
    const out = {};
    for (let k = t.childStart[0]; k < t.childStart[1]; k++) out[t.name(t.childList[k])] = t.total[t.childList[k]];
    return out;
  });
  assert.equal(Object.keys(groups).length, 3);
  assert.equal(groups['server [4242/4249]'], weightWhere(fixture, { from: 1500, to: 2250, threads: [1] }));
  await shot(page, 'flame-split');
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('a page with broken data shows one clear error instead of a blank page', async () => {
  const bad = { ...fixture, nodes: { parent: [-1, 1], frame: [0, 1] } };
  const { html } = flamePageFromJson('flame-bad', bad);
  const { page, ctx } = await open(browser, html);
  const msg = await page.locator('.ks-fatal').textContent();
  assert.match(msg, /nodes\.parent\[1\] = 1 must be below 1/);
  await ctx.close();
});

test('dark theme draws with the dark palette', async () => {
  const { html } = flamePage('flame-dark', fixture);
  const { page, errors, ctx } = await open(browser, html, { colorScheme: 'dark' });
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(bg, 'rgb(20, 20, 22)');
  await shot(page, 'flame-dark');
  assert.deepEqual(errors, []);
  void stackNames;
  await ctx.close();
});

test('an empty profile renders an empty graph without errors', async () => {
  const empty = { ...fixture, title: 'empty', samples: { node: [], weight: null, time_ms: [], thread: [] }, duration_ms: 0 };
  const { html } = flamePageFromJson('flame-empty', empty);
  const { page, errors, ctx } = await open(browser, html);
  const st = await page.evaluate(() => window.keisoku.flame.stats());
  assert.equal(st.total, 0);
  assert.equal(await page.locator('.ks-flame-status').textContent(), '0 samples in view');
  await page.mouse.click(200, 300);
  await page.keyboard.press('/');
  await page.keyboard.type('x');
  assert.deepEqual(errors, []);
  await ctx.close();
});
