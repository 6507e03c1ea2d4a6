// Browser tests of the flame page's views on a profile recorded at test
// time: perf with call graphs over a Node program that runs two phases one
// after the other (phaseAlpha, then phaseBeta), through the real
// `keisoku flame`. Time order puts every phaseAlpha box left of every
// phaseBeta box (the merged graph sorts them by name, the left-heavy one
// by weight); the sandwich's halves both hold the function's samples; the
// whole view survives a reload from the URL; a frame's name is copied from
// its menu and with `c`; `?` lists every key. Skipped, with the reason,
// when perf cannot record here or KEISOKU_BIN lacks `keisoku flame`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { binSupports, embeddedProfile, launch, open, runBin, scratch, shot } from './helpers/browser.mjs';
import { forEachStack, weightWhere } from './helpers/profiles.mjs';

// Work counted in iterations, not wall time, so a loaded machine gives
// the same number of samples per phase, only later.
const PROGRAM = `function phaseAlpha(n) { let x = 0; for (let r = 0; r < n; r++) for (let i = 0; i < 1e4; i++) x += Math.sqrt(i * 7 + r); return x; }
function phaseBeta(n) { let t = 0; for (let r = 0; r < n; r++) { const a = []; for (let i = 0; i < 200; i++) a.push({ k: 'k' + ((i * 31 + r) % 97), v: i }); a.sort((p, q) => (p.k < q.k ? -1 : p.k > q.k ? 1 : 0)); t += a[0].v; } return t; }
console.log(phaseAlpha(20000), phaseBeta(12000));
`;

let browser;
let recorded = null;
let skip = null;
before(async () => {
  if (!binSupports('flame')) {
    skip = 'KEISOKU_BIN does not implement `keisoku flame`';
    return;
  }
  const dir = scratch('flame-views-real');
  const prog = join(dir, 'phases.js');
  writeFileSync(prog, PROGRAM);
  const data = join(dir, 'perf.data');
  // cwd: node 20 with --perf-basic-prof writes an isolate-*-v8.log into its
  // working directory; it belongs in the scratch dir, not in web/.
  const rec = spawnSync('perf', ['record', '-q', '-F', '499', '-g', '-o', data, '--', process.execPath, '--perf-basic-prof', prog], { encoding: 'utf8', cwd: dir });
  if (rec.error || rec.status !== 0) {
    skip = `perf record failed here: ${rec.error ? rec.error.message : rec.stderr.trim().split('\n').pop()}`;
    return;
  }
  const script = spawnSync('perf', ['script', '-i', data], { encoding: 'utf8', maxBuffer: 1 << 28 });
  if (script.status !== 0) {
    skip = `perf script failed: ${script.stderr}`;
    return;
  }
  const input = join(dir, 'phases.perf');
  writeFileSync(input, script.stdout);
  const html = join(dir, 'phases.html');
  runBin(['flame', input, '-o', html]);
  // Folded input: no sample times (time order unavailable).
  const folded = join(dir, 'phases.folded');
  writeFileSync(folded, runBin(['collapse', 'perf', input]).stdout);
  const foldedHtml = join(dir, 'phases-folded.html');
  runBin(['flame', folded, '-o', foldedHtml]);
  recorded = { html, foldedHtml, data: embeddedProfile(html) };
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

/** Nodes of the page's tree whose name matches, with their x extent. */
async function boxes(page, source) {
  return page.evaluate((src) => {
    const t = window.keisoku.flame.tree;
    const re = new RegExp(src);
    const out = [];
    for (let n = 1; n < t.n; n++) if (re.test(t.name(n))) out.push({ n, x0: t.x[n], x1: t.x[n] + t.total[n], w: t.total[n] });
    return out;
  }, source);
}

/** A regex matching exactly `name`. */
function exact(name) {
  return new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
}

/** The exact function name of the heaviest frame matching `re` in the data. */
function nameOf(data, re) {
  const w = new Map();
  forEachStack(data, (names, weight) => {
    for (const n of new Set(names)) if (re.test(n)) w.set(n, (w.get(n) ?? 0) + weight);
  });
  return [...w].sort((a, b) => b[1] - a[1])[0]?.[0] ?? null;
}

test('real perf profile: time order shows the phases in the order they ran; left heavy sorts by weight', async (t) => {
  if (skip) return t.skip(skip);
  const { page, errors, ctx } = await open(browser, recorded.html);
  assert.ok(recorded.data.samples?.time_ms, 'perf script input keeps sample times');
  const alpha = nameOf(recorded.data, /phaseAlpha/);
  const beta = nameOf(recorded.data, /phaseBeta/);
  assert.ok(alpha && beta, `both phases were sampled (${alpha}, ${beta})`);
  const opt = page.locator('.ks-flame-mode option[value="time-order"]');
  assert.equal(await opt.isDisabled(), false);
  // Merged: one box per path, children in name order.
  const total = weightWhere(recorded.data);
  await page.selectOption('.ks-flame-mode', 'time-order');
  const st = await page.evaluate(() => window.keisoku.flame.stats());
  assert.equal(st.total, total, 'time order keeps every sample');
  const a = await boxes(page, 'phaseAlpha');
  const b = await boxes(page, 'phaseBeta');
  const aEnd = Math.max(...a.map((x) => x.x1));
  const bStart = Math.min(...b.map((x) => x.x0));
  assert.ok(aEnd <= bStart, `every phaseAlpha box (to ${aEnd}) ends before the first phaseBeta box (${bStart})`);
  // Its weight is the same as in the data, spread over its boxes.
  const outer = (list) => list.filter((x) => !list.some((y) => y.n !== x.n && y.x0 <= x.x0 && x.x1 <= y.x1 && y.w > x.w)).reduce((s, x) => s + x.w, 0);
  assert.equal(outer(a), weightWhere(recorded.data, { match: /phaseAlpha/ }));
  await shot(page, 'flame-views-time-order');
  // Left heavy: every child list heaviest first.
  await page.selectOption('.ks-flame-mode', 'left-heavy');
  const sorted = await page.evaluate(() => {
    const t = window.keisoku.flame.tree;
    for (let i = 0; i < t.n; i++) for (let k = t.childStart[i] + 1; k < t.childStart[i + 1]; k++) if (t.total[t.childList[k - 1]] < t.total[t.childList[k]]) return false;
    return true;
  });
  assert.ok(sorted);
  assert.equal((await page.evaluate(() => window.keisoku.flame.stats())).total, total);
  await shot(page, 'flame-views-left-heavy');
  // `m` cycles to the next mode: time order.
  await page.locator('body').press('m');
  assert.equal(await page.inputValue('.ks-flame-mode'), 'time-order');
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('real perf profile: the URL holds the whole view; a reload and a fresh tab open the same view', async (t) => {
  if (skip) return t.skip(skip);
  const { page, errors, ctx } = await open(browser, recorded.html);
  const alpha = nameOf(recorded.data, /phaseAlpha/);
  // A link equal to the page as it opened rebuilds nothing (a million-sample
  // tree takes seconds): the tree object stays the same.
  assert.ok(await page.evaluate(() => {
    const t = window.keisoku.flame.tree;
    window.keisoku.views.start();
    return window.keisoku.flame.tree === t && location.hash === '';
  }));
  // Focus on phaseAlpha's caller with shift+click on its frame: the graph
  // re-roots at that function's outermost call.
  const a0 = (await boxes(page, 'phaseAlpha')).sort((x, y) => y.w - x.w)[0];
  const caller = await page.evaluate((n) => {
    const t = window.keisoku.flame.tree;
    return { n: t.parent[n], name: t.name(t.parent[n]) };
  }, a0.n);
  const cr = await page.evaluate((n) => window.keisoku.flame.frameRect(n), caller.n);
  const canvas = await page.locator('.ks-graph .ks-flame-canvas').boundingBox();
  await page.keyboard.down('Shift');
  await page.mouse.click(canvas.x + cr.x + Math.min(cr.w / 2, 30), canvas.y + cr.y + cr.h / 2);
  await page.keyboard.up('Shift');
  await page.waitForFunction((name) => window.keisoku.views.current().focus === name, caller.name);
  // The table row first: selecting a function searches for it.
  await page.locator('.ks-functable-table td.ks-name', { hasText: alpha }).first().click();
  await page.selectOption('.ks-flame-mode', 'left-heavy');
  await page.click('.ks-btn-icicle');
  await page.keyboard.press('/');
  await page.keyboard.press('Control+a');
  await page.keyboard.type('phase');
  await page.keyboard.press('Enter');
  // Zoom into the frame of phaseAlpha (the widest box named so).
  const a = (await boxes(page, 'phaseAlpha')).sort((x, y) => y.w - x.w)[0];
  await page.evaluate((n) => window.keisoku.flame.zoomTo(n), a.n);
  const threads = await page.locator('.ks-thread-filter option').evaluateAll((os) => os.map((o) => o.value));
  const pick = threads.find((v) => v.startsWith('t:'));
  if (pick) await page.selectOption('.ks-thread-filter', pick);
  const before = await page.evaluate(() => ({ view: window.keisoku.views.current(), stats: window.keisoku.flame.stats(), hash: location.hash }));
  assert.equal(before.view.mode, 'left-heavy');
  assert.equal(before.view.icicle, true);
  assert.equal(before.view.search, 'phase');
  assert.equal(before.view.fn, alpha);
  assert.equal(before.view.focus, caller.name);
  assert.ok(before.stats.zoomPath[0].startsWith(`${caller.name}\u0000`), `the focused graph is rooted at ${caller.name}: ${before.stats.zoomPath[0]}`);
  assert.ok(before.view.zoom.length > 0 && before.view.zoom.at(-1) === alpha, `zoomed to ${alpha}: ${before.view.zoom}`);
  assert.match(before.hash, /mode=left-heavy/);
  assert.match(before.hash, /icicle=1/);
  assert.match(before.hash, /focus=/);
  const check = async (pg, how) => {
    const now = await pg.evaluate(() => ({ view: window.keisoku.views.current(), stats: window.keisoku.flame.stats(), hash: location.hash }));
    assert.deepEqual(now.view, before.view, `${how}: same view`);
    assert.deepEqual(now.stats.zoomPath, before.stats.zoomPath, `${how}: same zoom`);
    assert.equal(now.stats.zoomTotal, before.stats.zoomTotal, `${how}: same zoomed weight`);
    assert.deepEqual(now.stats.matched, before.stats.matched, `${how}: same search shares`);
    assert.equal(now.hash, before.hash);
    assert.equal(await pg.inputValue('.ks-flame-mode'), 'left-heavy');
    assert.equal(await pg.inputValue('.ks-flame-search'), 'phase');
    assert.equal(await pg.locator('.ks-view-notice').isHidden(), true);
  };
  await page.reload();
  await page.waitForFunction(() => window.keisoku !== undefined);
  await check(page, 'reload');
  await shot(page, 'flame-views-url-reload');
  // A fresh tab opened from the link.
  const other = await ctx.newPage();
  await other.goto(pathToFileURL(recorded.html).href + before.hash);
  await other.waitForFunction(() => window.keisoku !== undefined);
  await check(other, 'shared link');
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('real perf profile: sandwich of a function from the table, the frame menu and a link', async (t) => {
  if (skip) return t.skip(skip);
  const { page, errors, ctx } = await open(browser, recorded.html);
  const beta = nameOf(recorded.data, /phaseBeta/);
  await page.locator('.ks-functable-table td.ks-name', { hasText: beta }).first().click();
  await page.click('.ks-btn-sandwich');
  assert.equal(await page.locator('.ks-sandwich').isVisible(), true);
  assert.equal(await page.locator('.ks-graph').isHidden(), true, 'the sandwich takes the graph\'s place');
  const through = weightWhere(recorded.data, { match: exact(beta) });
  const halves = await page.evaluate(() => {
    const v = window.keisoku.views;
    const s = v.sandwich;
    const kid = (t) => t.name(t.childList[t.childStart[0]]);
    return { callers: s.callers.tree.total[0], callees: s.callees.tree.total[0], top: kid(s.callers.tree), bottom: kid(s.callees.tree), hash: location.hash };
  });
  assert.equal(halves.callers, through);
  assert.equal(halves.callees, through);
  assert.equal(halves.top, beta);
  assert.equal(halves.bottom, beta);
  assert.match(halves.hash, /view=sandwich/);
  assert.match(await page.locator('.ks-sandwich-title').textContent(), /Sandwich: /);
  await shot(page, 'flame-views-sandwich');
  // Reload: the same sandwich.
  await page.reload();
  await page.waitForFunction(() => window.keisoku !== undefined);
  assert.equal(await page.locator('.ks-sandwich').isVisible(), true);
  assert.equal(await page.evaluate(() => window.keisoku.views.current().fn), beta);
  // Another row of the table: the sandwich follows it.
  const alpha = nameOf(recorded.data, /phaseAlpha/);
  await page.locator('.ks-functable-table td.ks-name', { hasText: alpha }).first().click();
  assert.equal(await page.locator('.ks-sandwich-title').textContent(), `Sandwich: ${alpha}`);
  assert.equal(await page.evaluate(() => window.keisoku.views.sandwich.callers.tree.total[0]), weightWhere(recorded.data, { match: exact(alpha) }));
  // The Flame graph tab brings the graph back; the frame menu opens a sandwich too.
  await page.click('.ks-tab-flame');
  assert.equal(await page.locator('.ks-graph').isVisible(), true);
  const a = (await boxes(page, 'phaseAlpha')).sort((x, y) => y.w - x.w)[0];
  const r = await page.evaluate((n) => window.keisoku.flame.frameRect(n), a.n);
  const box = await page.locator('.ks-graph .ks-flame-canvas').boundingBox();
  await page.mouse.click(box.x + r.x + Math.min(r.w / 2, 30), box.y + r.y + r.h / 2, { button: 'right' });
  assert.equal(await page.locator('.ks-menu').isVisible(), true);
  await shot(page, 'flame-views-menu');
  await page.locator('.ks-menu-item', { hasText: 'Sandwich' }).click();
  const fn = await page.evaluate(() => window.keisoku.views.current());
  assert.equal(fn.panel, 'sandwich');
  assert.match(fn.fn, /phaseAlpha/);
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('real perf profile: copy a frame name from the menu and with c; ? lists every key; Esc closes it', async (t) => {
  if (skip) return t.skip(skip);
  const { page, errors, ctx } = await open(browser, recorded.html);
  await ctx.grantPermissions(['clipboard-read', 'clipboard-write']);
  const a = (await boxes(page, 'phaseAlpha')).sort((x, y) => y.w - x.w)[0];
  const name = await page.evaluate((n) => window.keisoku.flame.tree.name(n), a.n);
  const r = await page.evaluate((n) => window.keisoku.flame.frameRect(n), a.n);
  const box = await page.locator('.ks-flame-canvas').boundingBox();
  const [x, y] = [box.x + r.x + Math.min(r.w / 2, 30), box.y + r.y + r.h / 2];
  await page.mouse.click(x, y, { button: 'right' });
  await page.locator('.ks-menu-item', { hasText: 'Copy name' }).click();
  await page.waitForFunction((n) => document.querySelector('.ks-toast')?.textContent === `copied: ${n}`, name);
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), name);
  // `c` over another frame copies that one.
  await page.evaluate(() => navigator.clipboard.writeText(''));
  const root = await page.evaluate(() => {
    const t = window.keisoku.flame.tree;
    let best = -1;
    for (let k = t.childStart[0]; k < t.childStart[1]; k++) if (best < 0 || t.total[t.childList[k]] > t.total[best]) best = t.childList[k];
    return best;
  });
  const rootName = await page.evaluate((n) => window.keisoku.flame.tree.name(n), root);
  const rr = await page.evaluate((n) => window.keisoku.flame.frameRect(n), root);
  await page.mouse.move(box.x + rr.x + Math.min(rr.w / 2, 30), box.y + rr.y + rr.h / 2);
  await page.keyboard.press('c');
  await page.waitForFunction((n) => document.querySelector('.ks-toast')?.textContent === `copied: ${n}`, rootName);
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), rootName);
  // Zoom, then `?`: the help lists every key; Esc closes it and keeps the zoom.
  await page.evaluate((n) => window.keisoku.flame.zoomTo(n), a.n);
  await page.keyboard.press('?');
  assert.equal(await page.locator('.ks-help').isVisible(), true);
  const keys = await page.locator('.ks-help-keys tr td:first-child').allTextContents();
  for (const k of ['/', 'Esc', '?', 'c', 's', 'm', 'b', 'i', 'click', 'shift+click', 'right click']) assert.ok(keys.includes(k), `help lists ${k}: ${keys}`);
  await shot(page, 'flame-views-help');
  await page.keyboard.press('Escape');
  assert.equal(await page.locator('.ks-help').isHidden(), true);
  assert.notEqual((await page.evaluate(() => window.keisoku.flame.stats())).zoomNode, 0, 'Esc closed the help only');
  await page.keyboard.press('b');
  assert.equal((await page.evaluate(() => window.keisoku.flame.stats())).zoomNode, 0, 'b zooms back');
  await page.keyboard.press('i');
  assert.equal(await page.evaluate(() => window.keisoku.flame.frameRect(0).y), 0, 'i: icicle');
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('folded input: time order is offered disabled with the reason, and a link asking for it says it was not applied', async (t) => {
  if (skip) return t.skip(skip);
  const url = pathToFileURL(recorded.foldedHtml).href + '#mode=time-order&q=phase';
  const ctx = await browser.newContext({ viewport: { width: 1366, height: 900 } });
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(url);
  await page.waitForFunction(() => window.keisoku !== undefined);
  const opt = page.locator('.ks-flame-mode option[value="time-order"]');
  assert.equal(await opt.isDisabled(), true);
  const why = /no sample timestamps|no individual samples/;
  assert.match(await opt.textContent(), /unavailable/);
  assert.match(await opt.getAttribute('title'), why);
  assert.match(await page.locator('.ks-flame-mode').getAttribute('title'), why);
  assert.equal(await page.inputValue('.ks-flame-mode'), 'merged');
  assert.match(await page.locator('.ks-view-notice').textContent(), /mode=time-order: .*(no sample timestamps|no individual samples)/);
  assert.equal(await page.inputValue('.ks-flame-search'), 'phase', 'the rest of the link applies');
  assert.equal(await page.evaluate(() => location.hash), '#q=phase', 'the link is rewritten to what is shown');
  await shot(page, 'flame-views-folded');
  assert.deepEqual(errors, []);
  await ctx.close();
});
