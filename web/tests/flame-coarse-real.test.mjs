// Browser test of the flame page's time order past its box limit, on a
// profile written at test time and read by the real `keisoku flame`: a V8
// .cpuprofile (the format `node --cpu-prof` writes) whose stack changes at
// almost every sample, so the exact time-ordered tree needs more than
// MAX_TIME_ORDER_NODES (2,000,000) boxes. The page then draws it folded
// (boxes lighter than 1/8192 of the view go into their callers), and says so
// with the number folded; every number read from it (the status line's
// search shares, the tooltip's shares and self, the function table) must
// still be the exact count from the input, computed here from the input
// itself, not from the folded boxes. Skipped when KEISOKU_BIN lacks
// `keisoku flame`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { binSupports, launch, open, runBin, scratch, shot } from './helpers/browser.mjs';

// Phases of work one after the other; in each, the leaf alternates between
// two deep call chains at every sample (one of them ends in `needle`), and
// every tenth sample is the phase's own code.
const PHASES = 50;
const PER_PHASE = 1200;
const DEPTH = 44;
// The page's limit and finest resolution (web/src/flame/timeorder.ts).
const MAX_BOXES = 2_000_000;
const RESOLUTION = 8192;

/** The profile: V8 nodes, the sampled node per sample, and each sample's stack (names, root first). */
function makeProfile() {
  const nodes = [];
  const stackOf = new Map();
  // One source line per function, so a function is one frame in every phase.
  const lines = new Map();
  const node = (name, parent) => {
    const id = nodes.length + 1;
    if (!lines.has(name)) lines.set(name, lines.size);
    nodes.push({ id, callFrame: { functionName: name, scriptId: '1', url: name === '(root)' ? '' : 'file:///srv/app.js', lineNumber: lines.get(name), columnNumber: 0 }, hitCount: 0, children: [] });
    if (parent) {
      nodes[parent - 1].children.push(id);
      stackOf.set(id, [...(stackOf.get(parent) ?? []), name]);
    } else stackOf.set(id, []);
    return id;
  };
  const root = node('(root)', 0);
  const serve = node('serve', node('main', root));
  const samples = [];
  for (let k = 0; k < PHASES; k++) {
    const phase = node(`phase_${k}`, serve);
    let a = phase;
    let b = phase;
    for (let j = 0; j < DEPTH; j++) {
      a = node(`stepA_${j}`, a);
      b = node(j === DEPTH - 1 ? 'needle' : `stepB_${j}`, b);
    }
    for (let i = 0; i < PER_PHASE; i++) samples.push(i % 10 === 9 ? phase : i % 2 ? a : b);
  }
  // V8's intervals are irregular; samples weigh the time to the next one.
  const timeDeltas = samples.map((_, i) => 800 + ((i * 7919) % 400));
  const startTime = 1_000_000;
  const endTime = startTime + timeDeltas.reduce((s, d) => s + d, 0) + 1000;
  return { doc: { nodes, startTime, endTime, samples, timeDeltas }, stacks: samples.map((s) => stackOf.get(s)) };
}

/** Each sample's weight as DevTools counts it: the time until the next sample (the last: until endTime), in ns. */
function weights(doc) {
  let t = doc.startTime;
  const times = doc.timeDeltas.map((d) => (t += d));
  return times.map((ti, i) => ((i + 1 < times.length ? times[i + 1] : doc.endTime) - ti) * 1000);
}

/**
 * The exact time-ordered boxes of the stacks (a frame that stays on the
 * stack from one sample to the next is one box): each box's weight.
 */
function exactBoxes(stacks, w) {
  const out = [];
  const open = [];
  let at = 0;
  let prev = [];
  stacks.forEach((s, i) => {
    let d = 0;
    while (d < s.length && d < prev.length && s[d] === prev[d]) d++;
    while (open.length > d) out.push(at - open.pop());
    for (let j = d; j < s.length; j++) open.push(at);
    at += w[i];
    prev = s;
  });
  while (open.length) out.push(at - open.pop());
  return out;
}

/** The page's percentage format (web/src/common/format.ts fmtShare). */
function pct(part, whole) {
  const p = (part / whole) * 100;
  if (p === 0) return '0%';
  return p >= 10 ? `${p.toFixed(1)}%` : p >= 0.1 ? `${p.toFixed(2)}%` : `${p.toFixed(3)}%`;
}

let browser;
let html = null;
let expect = null;
let skip = null;
before(async () => {
  if (!binSupports('flame')) {
    skip = 'KEISOKU_BIN does not implement `keisoku flame`';
    return;
  }
  const dir = scratch('flame-coarse-real');
  const { doc, stacks } = makeProfile();
  const input = join(dir, 'phases.cpuprofile');
  writeFileSync(input, JSON.stringify(doc));
  html = join(dir, 'phases.html');
  runBin(['flame', input, '-o', html]);
  const w = weights(doc);
  const total = w.reduce((s, x) => s + x, 0);
  const boxes = exactBoxes(stacks, w);
  const minW = total / RESOLUTION;
  const sum = (pred) => stacks.reduce((s, st, i) => (pred(st) ? s + w[i] : s), 0);
  const phase = 'phase_7';
  expect = {
    total,
    boxes: boxes.length,
    folded: boxes.filter((b) => b < minW).length,
    needle: sum((s) => s.includes('needle')),
    phase,
    phaseTotal: sum((s) => s[2] === phase),
    phaseSelf: sum((s) => s.length === 3 && s[2] === phase),
    phaseNeedle: sum((s) => s[2] === phase && s.includes('needle')),
  };
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

test('time order past the box limit: the status says how much is folded; every share is the exact count', async (t) => {
  if (skip) return t.skip(skip);
  assert.ok(expect.boxes > MAX_BOXES, `the input needs ${expect.boxes} boxes, past the limit`);
  assert.ok(expect.folded > 0 && expect.phaseNeedle > 0);
  const { page, errors, ctx } = await open(browser, html);
  assert.equal(await page.locator('.ks-flame-mode option[value="time-order"]').isDisabled(), false);
  await page.selectOption('.ks-flame-mode', 'time-order');
  const status = page.locator('.ks-flame-status');
  await page.waitForFunction(() => document.querySelector('.ks-flame-status')?.dataset.foldedBoxes);
  const data = await status.evaluate((el) => ({ ...el.dataset }));
  // Folded: exactly the boxes of the input lighter than 1/8192 of the view.
  assert.equal(Number(data.foldedResolution), RESOLUTION);
  assert.equal(Number(data.foldedBoxes), expect.folded);
  const text = await status.textContent();
  assert.match(text, /time order/);
  assert.ok(text.includes(`too many boxes to draw them all: ${expect.folded.toLocaleString('en-US')} boxes under`), text);
  assert.ok(text.includes(`(1/${RESOLUTION.toLocaleString('en-US')} of the view) are drawn folded into their callers`), text);
  assert.match(text, /count every sample exactly/);
  assert.equal(Number(data.total), expect.total, 'every sample is in view');
  // The phases stay (each far wider than the cut); the chains are folded.
  const tree = await page.evaluate(() => {
    const t = window.keisoku.flame.tree;
    const names = new Set();
    for (let n = 1; n < t.n; n++) names.add(t.name(n));
    return { n: t.n, names: [...names] };
  });
  assert.ok(tree.names.includes(expect.phase));
  assert.ok(!tree.names.includes('needle'), 'every needle box (one sample) is folded');
  assert.equal(tree.n - 1, expect.boxes - expect.folded, 'kept: the boxes at least as heavy as the cut');
  await shot(page, 'flame-coarse-time-order');

  // Search: `needle` is drawn nowhere, yet its share is the exact one.
  await page.fill('.ks-flame-search', 'needle');
  await page.waitForFunction(() => document.querySelector('.ks-flame-status')?.dataset.matchedAll !== '');
  let st = await page.evaluate(() => window.keisoku.flame.stats());
  assert.equal(st.matched.all, expect.needle);
  assert.equal(st.matched.zoom, expect.needle);
  assert.ok((await status.textContent()).includes(`matched ${pct(expect.needle, expect.total)} of all, ${pct(expect.needle, expect.total)} of view`));

  // Hover a phase: its share of all, and its self (its own samples only,
  // not the chains folded into it).
  const box = await page.evaluate((name) => {
    const t = window.keisoku.flame.tree;
    for (let n = 1; n < t.n; n++) if (t.name(n) === name) return n;
    return -1;
  }, expect.phase);
  assert.ok(box > 0);
  const r = await page.evaluate((n) => window.keisoku.flame.frameRect(n), box);
  const canvas = await page.locator('.ks-flame-canvas').boundingBox();
  await page.mouse.move(canvas.x + r.x + r.w / 2, canvas.y + r.y + r.h / 2);
  const tip = page.locator('.ks-flame-tip');
  await tip.waitFor({ state: 'visible' });
  const rows = Object.fromEntries(await tip.locator('tr').evaluateAll((trs) => trs.map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent])));
  assert.equal(await tip.locator('.ks-tip-name').textContent(), expect.phase);
  assert.equal(rows['% of all'], pct(expect.phaseTotal, expect.total));
  assert.ok(rows.self.endsWith(`(${pct(expect.phaseSelf, expect.total)})`), `self: ${rows.self}, expected ${pct(expect.phaseSelf, expect.total)} of all`);
  await shot(page, 'flame-coarse-hover');

  // Zoomed into the phase: the search share of the view and the function
  // table count the samples under that box, including the folded ones.
  await page.mouse.click(canvas.x + r.x + r.w / 2, canvas.y + r.y + r.h / 2);
  await page.waitForFunction((n) => window.keisoku.flame.stats().zoomNode === n, box);
  st = await page.evaluate(() => window.keisoku.flame.stats());
  assert.equal(st.zoomTotal, expect.phaseTotal);
  // The tooltip still open over the frame follows the zoom.
  const after = Object.fromEntries(await tip.locator('tr').evaluateAll((trs) => trs.map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent])));
  assert.equal(after['% of zoomed root'], '100.0%');
  assert.equal(after['% of all'], pct(expect.phaseTotal, expect.total));
  assert.equal(st.matched.zoom, expect.phaseNeedle);
  assert.ok((await status.textContent()).includes(`of all, ${pct(expect.phaseNeedle, expect.phaseTotal)} of view`));
  const needleRow = page.locator('.ks-functable-table tr', { has: page.locator('td.ks-name', { hasText: /^needle$/ }) });
  await needleRow.waitFor();
  const cells = await needleRow.locator('td').allTextContents();
  assert.equal(cells[1], pct(expect.phaseNeedle, expect.phaseTotal), 'needle self % of the zoomed phase');
  assert.equal(cells[3], pct(expect.phaseNeedle, expect.phaseTotal), 'needle total % of the zoomed phase');
  await shot(page, 'flame-coarse-zoomed');
  assert.deepEqual(errors, []);
  await ctx.close();
});
