// Browser tests on real profiles recorded on this machine (perf script of
// C, Java, Node and Python programs, kept by crates/stacks' tests), through
// the real `keisoku flame` and `keisoku scope` commands. Skipped, with the
// reason, when KEISOKU_BIN does not implement them or the data is absent.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { launch, open, shot, embeddedProfile, binSupports, runBin, scratch, ROOT } from './helpers/browser.mjs';
import { weightWhere } from './helpers/profiles.mjs';

const DATA = join(ROOT, 'crates/stacks/tests/data');
let browser;
before(async () => {
  if (binSupports('flame') || binSupports('scope')) browser = await launch();
});
after(async () => {
  await browser?.close();
});

/** Samples in a perf script file: one header line per sample (a line starting a record). */
function perfSamples(text) {
  return text.split('\n').filter((l) => l.length && !/^\s/.test(l) && !l.startsWith('#')).length;
}

/** The first of `name` or `name.gz` that exists, or null. */
function dataFile(name) {
  for (const p of [join(DATA, name), join(DATA, `${name}.gz`)]) if (existsSync(p)) return p;
  return null;
}

/** A data file's text, gunzipped when it ends in .gz. */
function text(path) {
  const raw = readFileSync(path);
  return (path.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8');
}

function foldedTotal(path) {
  return text(path)
    .split('\n')
    .filter(Boolean)
    .reduce((a, l) => a + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

for (const lang of ['c', 'java', 'node', 'python']) {
  test(`real ${lang} perf profile: keisoku flame page draws every sample`, async (t) => {
    const input = dataFile(`${lang}.perf`);
    if (!binSupports('flame')) return t.skip('KEISOKU_BIN does not implement `keisoku flame` yet');
    if (!input) return t.skip(`${lang}.perf is missing in ${DATA}`);
    const html = join(scratch('flame-real'), `${lang}.html`);
    runBin(['flame', input, '-o', html]);
    const { page, errors, ctx } = await open(browser, html);
    const data = embeddedProfile(html);
    const st = await page.evaluate(() => window.keisoku.flame.stats());
    assert.equal(st.total, weightWhere(data), 'the graph holds all of the embedded profile');
    // The embedded profile is the whole capture: its sample count or, when
    // weighted by period, the folded total of stackcollapse-perf.pl.
    const samples = perfSamples(text(input));
    const expected = dataFile(`${lang}.folded.expected`);
    const allowed = [samples, expected ? foldedTotal(expected) : samples];
    assert.ok(allowed.includes(st.total), `total ${st.total} is one of ${allowed}`);
    // Zoom into the widest frame under the root: it spans the width.
    const widest = await page.evaluate(() => {
      const tr = window.keisoku.flame.tree;
      let best = -1;
      for (let k = tr.childStart[0]; k < tr.childStart[1]; k++) if (best < 0 || tr.total[tr.childList[k]] > tr.total[best]) best = tr.childList[k];
      window.keisoku.flame.zoomTo(best);
      return window.keisoku.flame.frameRect(best).w;
    });
    const width = (await page.locator('.ks-flame-canvas').boundingBox()).width;
    assert.ok(Math.abs(widest - width) < 1.5);
    await page.keyboard.press('Escape');
    await shot(page, `flame-real-${lang}`);
    assert.deepEqual(errors, []);
    await ctx.close();
  });
}

test('real node perf profile: keisoku scope heat map range re-flames exactly', async (t) => {
  const input = dataFile('node.perf');
  if (!binSupports('scope')) return t.skip('KEISOKU_BIN does not implement `keisoku scope` yet');
  if (!input) return t.skip(`node.perf is missing in ${DATA}`);
  const html = join(scratch('flame-real'), 'node-scope.html');
  runBin(['scope', input, '-o', html, '--rows', '20']);
  const { page, errors, ctx } = await open(browser, html);
  const data = embeddedProfile(html);
  assert.ok(data.samples && data.samples.time_ms, 'perf script input keeps sample times');
  // Select the first second's cells 0..9 (0-500 ms) through the mouse.
  const cell = async (c, r) => {
    const rect = await page.evaluate(([a, b]) => window.keisoku.heat.cellRect(a, b), [c, r]);
    const box = await page.locator('.ks-heat-canvas').boundingBox();
    return [box.x + rect.x + rect.w / 2, box.y + rect.y + rect.h / 2];
  };
  const [x0, y0] = await cell(0, 0);
  const [x1, y1] = await cell(0, 9);
  await page.mouse.move(x0, y0);
  await page.mouse.down();
  await page.mouse.move(x1, y1, { steps: 4 });
  await page.mouse.up();
  const sel = await page.evaluate(() => window.keisoku.heat.selections().a);
  assert.deepEqual(sel, [0, 500]);
  const st = await page.evaluate(() => window.keisoku.flame.stats());
  assert.equal(st.total, weightWhere(data, { from: 0, to: 500, idle: false }));
  await shot(page, 'scope-real-node');
  assert.deepEqual(errors, []);
  await ctx.close();
});

for (const [name, hint] of [['go.pprof', 'pprof from a Go program'], ['node.cpuprofile', 'node --cpu-prof']]) {
  test(`real ${hint}: keisoku flame page renders it`, async (t) => {
    const input = dataFile(name);
    if (!binSupports('flame')) return t.skip('KEISOKU_BIN does not implement `keisoku flame` yet');
    if (!input) return t.skip(`${name} is missing in ${DATA}`);
    const html = join(scratch('flame-real'), `${name}.html`);
    runBin(['flame', input, '-o', html]);
    const { page, errors, ctx } = await open(browser, html);
    const data = embeddedProfile(html);
    const st = await page.evaluate(() => window.keisoku.flame.stats());
    assert.ok(st.total > 0);
    assert.equal(st.total, weightWhere(data));
    assert.ok(await page.locator('.ks-functable-table tbody tr').count() > 3);
    await shot(page, `flame-real-${name}`);
    assert.deepEqual(errors, []);
    await ctx.close();
  });
}
