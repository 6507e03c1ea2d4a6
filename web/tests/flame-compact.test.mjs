// Browser tests of the compact in-page profile form (docs/profile-json.md,
// "In HTML pages") on pages made by the real binary: the first paint comes
// from the embedded preview tree while the columns are still unparsed, the
// preview's widths are exact, and once the columns are read the drawn tree
// is exactly the data's merged call tree. A page cut short says so.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { launch, open, shot, embeddedData, embeddedProfile, binSupports, runBin, scratch } from './helpers/browser.mjs';
import { syntheticProfile, toFolded, toCpuprofile } from './helpers/profiles.mjs';

const skip = !binSupports('flame') && 'needs KEISOKU_BIN (a keisoku binary with `flame`)';
let browser;
before(async () => {
  if (!skip) browser = await launch();
});
after(async () => {
  await browser?.close();
});

// Big enough (170,000+ stack nodes) that the page embeds a preview tree.
const fixture = syntheticProfile({ samples: 60000, frames: 20000, seconds: 20, threads: 4, seed: 3 });

/** Weight per root-to-node path of frame ids ("3;17;42"), from profile JSON. */
function pathTotals(p) {
  const self = new Float64Array(p.nodes.parent.length);
  if (p.samples) p.samples.node.forEach((n, i) => (self[n] += p.samples.weight ? p.samples.weight[i] : 1));
  else p.counts.forEach((c, n) => (self[n] = c));
  const key = [];
  const totals = new Map();
  for (let n = 0; n < self.length; n++) {
    const par = p.nodes.parent[n];
    key[n] = par < 0 ? `${p.nodes.frame[n]}` : `${key[par]};${p.nodes.frame[n]}`;
  }
  for (let n = 0; n < self.length; n++) {
    if (!self[n]) continue;
    for (let m = n; m >= 0; m = p.nodes.parent[m]) totals.set(key[m], (totals.get(key[m]) ?? 0) + self[n]);
  }
  return totals;
}

/** Paths and totals of every node of the page's current tree (frame ids = profile frame ids). */
function pageTree(page) {
  return page.evaluate(() => {
    const t = window.keisoku.flame.tree;
    const key = [''];
    const out = [];
    for (let n = 1; n < t.n; n++) {
      const p = t.parent[n];
      key[n] = p === 0 ? `${t.func[n]}` : `${key[p]};${t.func[n]}`;
      out.push([key[n], t.total[n]]);
    }
    return { root: t.total[0], nodes: out };
  });
}

/** Preview paths by frame *name* (its frame table is its own) and totals. */
function previewTotals(pv) {
  const n = pv.parent.length;
  const total = Float64Array.from(pv.self);
  for (let i = n - 1; i > 0; i--) total[pv.parent[i]] += total[i];
  const key = [''];
  const out = new Map();
  for (let i = 1; i < n; i++) {
    const name = pv.frames.name[pv.frame[i]];
    key[i] = pv.parent[i] === 0 ? name : `${key[pv.parent[i]]};${name}`;
    out.set(key[i], total[i]);
  }
  return { root: total[0], paths: out };
}

for (const [label, make] of [
  ['folded (counts per node)', (dir) => write(dir, 'in.folded', toFolded(fixture))],
  ['.cpuprofile (time per sample)', (dir) => write(dir, 'in.cpuprofile', JSON.stringify(toCpuprofile(fixture)))],
]) {
  test(`compact page from ${label}: first paint from the preview, then the full tree equals the data`, { skip }, async () => {
    const dir = scratch(`flame-compact-${label.split(' ')[0].replace(/\W/g, '')}`);
    const html = join(dir, 'page.html');
    const input = make(dir);
    runBin(['flame', input, '-o', html]);
    // Every sample is in the columns: 60000 counts for folded stacks; for a
    // .cpuprofile, weighed by time (issue 16), the span from the first
    // sample to endTime, in ns.
    let expectedTotal = 60000;
    if (input.endsWith('.cpuprofile')) {
      const cp = JSON.parse(readFileSync(input, 'utf8'));
      expectedTotal = (cp.endTime - cp.startTime - cp.timeDeltas[0]) * 1000;
    }
    const header = embeddedData(html).profile;
    assert.equal(header.encoding, 'compact-1');
    assert.ok(header.preview, 'a profile this large gets a preview tree');
    const data = embeddedProfile(html);
    const dataTotals = pathTotals(data);
    const all = [...dataTotals].filter(([k]) => !k.includes(';')).reduce((a, [, w]) => a + w, 0);
    assert.equal(all, expectedTotal, 'every sample is in the columns');

    // The preview's kept frames have their exact widths (thinner ones fold
    // into their parent's self), keyed by frame names.
    const byName = new Map();
    for (const [k, w] of dataTotals) {
      const names = k.split(';').map((f) => data.frames.name[Number(f)]).join(';');
      byName.set(names, (byName.get(names) ?? 0) + w);
    }
    const pv = previewTotals(header.preview);
    assert.equal(pv.root, expectedTotal);
    assert.ok(pv.paths.size > 10 && pv.paths.size < dataTotals.size / 4, `preview keeps ${pv.paths.size} of ${dataTotals.size} nodes`);
    for (const [k, w] of pv.paths) assert.equal(w, byName.get(k), `preview width of ${k}`);

    const { page, errors, ctx } = await open(browser, html);
    // The first draw ran while the parser had not yet reached the columns,
    // and it drew the preview.
    const first = await page.evaluate(() => performance.getEntriesByName('keisoku:first-paint')[0]?.detail ?? null);
    assert.deepEqual(first, { readyState: 'loading', nodes: header.preview.parent.length });

    // After the full build: the drawn tree is the data's call tree, node for node.
    const tree = await pageTree(page);
    assert.equal(tree.root, expectedTotal);
    assert.equal(tree.nodes.length, dataTotals.size, 'one tree node per distinct stack prefix');
    for (const [k, w] of tree.nodes) {
      if (dataTotals.get(k) !== w) assert.fail(`node ${k}: page ${w}, data ${dataTotals.get(k)}`);
    }
    // And it is what the canvas shows: the widest root child spans its share.
    const wide = await page.evaluate(() => {
      const fg = window.keisoku.flame;
      const t = fg.tree;
      let best = t.childList[t.childStart[0]];
      for (let k = t.childStart[0]; k < t.childStart[1]; k++) if (t.total[t.childList[k]] > t.total[best]) best = t.childList[k];
      const canvas = document.querySelector('.ks-flame-canvas');
      return { share: t.total[best] / t.total[0], rect: fg.frameRect(best), width: canvas.clientWidth };
    });
    assert.ok(Math.abs(wide.rect.w - wide.share * wide.width) < 0.01, `width ${wide.rect.w} for a ${wide.share} share of ${wide.width}px`);
    assert.ok(await page.locator('.ks-functable-table tbody tr').count() > 10, 'function table built');
    await shot(page, `flame-compact-${label.split(' ')[0].replace(/\W/g, '')}`);
    assert.deepEqual(errors, []);
    await ctx.close();
  });
}

test('a compact page cut short shows one clear error after its preview', { skip }, async () => {
  const dir = scratch('flame-compact-cut');
  const full = join(dir, 'page.html');
  runBin(['flame', write(dir, 'in.folded', toFolded(fixture)), '-o', full]);
  const text = readFileSync(full, 'utf8');
  // Cut in the middle of the node columns: later columns are missing.
  const cut = text.slice(0, text.indexOf('id="keisoku-col-node-frame"') + 2000);
  const html = write(dir, 'cut.html', cut);
  const { page, ctx } = await open(browser, html);
  const msg = await page.locator('.ks-fatal').textContent();
  assert.match(msg, /^keisoku: profile: (node frames (has \d+ values, expected \d+|ends inside a value)|the page has no "[\w-]+" column \(was the file cut short\?\))$/);
  await ctx.close();
});

function write(dir, name, text) {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

/** perf script text (with pids, as `perf script -F+pid` and keisoku's recorder give) of a profile. */
function toPerfScript(p) {
  const out = [];
  for (let i = 0; i < p.samples.node.length; i++) {
    const t = p.threads[p.samples.thread[i]];
    out.push(`${t.comm} ${t.pid}/${t.tid} ${(p.samples.time_ms[i] / 1000 + 100).toFixed(6)}: 1 cpu-clock: `);
    for (let n = p.samples.node[i]; n >= 0; n = p.nodes.parent[n]) {
      const f = p.nodes.frame[n];
      out.push(`\t    ${(0x1000 + f).toString(16)} ${p.frames.name[f]} (${p.frames.module[f] || '[unknown]'})`);
    }
    out.push('');
  }
  return out.join('\n') + '\n';
}

test('a profile of two processes opens with one root per process, preview and full tree alike (issue 16)', { skip }, async () => {
  const dir = scratch('flame-compact-processes');
  const html = join(dir, 'page.html');
  // Threads 0-1 are process 4242 ("server"), 2-3 process 5151 ("worker").
  const input = write(dir, 'in.perf', toPerfScript(fixture));
  runBin(['flame', input, '-o', html]);
  const header = embeddedData(html).profile;
  assert.ok(header.preview, 'a profile this large gets a preview tree');
  assert.equal(header.preview.split, 'process');
  const pv = header.preview;
  const pvRoots = pv.parent.map((q, i) => [q, i]).filter(([q]) => q === 0).map(([, i]) => pv.frames.name[pv.frame[i]]).sort();
  assert.deepEqual(pvRoots, ['server [pid 4242]', 'worker [pid 5151]']);
  // The SVG roots the same stacks at the same processes.
  runBin(['flame', input, '-o', join(dir, 'out.folded')]);
  const foldedRoots = new Map();
  for (const l of readFileSync(join(dir, 'out.folded'), 'utf8').split('\n').filter(Boolean)) {
    const root = l.slice(0, l.indexOf(';'));
    foldedRoots.set(root, (foldedRoots.get(root) ?? 0) + Number(l.slice(l.lastIndexOf(' ') + 1)));
  }

  const { page, errors, ctx } = await open(browser, html);
  const first = await page.evaluate(() => performance.getEntriesByName('keisoku:first-paint')[0]?.detail ?? null);
  assert.deepEqual(first, { readyState: 'loading', nodes: pv.parent.length });
  await page.waitForFunction(() => window.keisoku?.views);
  const roots = await page.evaluate(() => {
    const t = window.keisoku.flame.tree;
    const out = [];
    for (let k = t.childStart[0]; k < t.childStart[1]; k++) {
      const c = t.childList[k];
      out.push([t.name(c), t.total[c], t.funcs.kind[t.func[c]]]);
    }
    return { out, split: document.querySelector('.ks-flame-split').value, hash: location.hash };
  });
  assert.equal(roots.split, 'process');
  assert.equal(roots.hash, '', 'the page as it opens needs no link state');
  // Left to right by name, as the preview drew them; each as wide as its
  // process's folded lines (whose root is the process name).
  assert.deepEqual(roots.out.map((r) => r[0]), ['server [pid 4242]', 'worker [pid 5151]']);
  assert.deepEqual(roots.out.map((r) => r[2]), ['process', 'process']);
  assert.deepEqual(roots.out.map((r) => r[1]), [foldedRoots.get('server'), foldedRoots.get('worker')]);
  await shot(page, 'flame-compact-processes');
  // Merging is a choice the link keeps; the table never lists the roots.
  await page.selectOption('.ks-flame-split', 'merge');
  assert.equal(await page.evaluate(() => location.hash), '#split=merge');
  assert.equal(await page.evaluate(() => window.keisoku.flame.tree.childStart[1] - window.keisoku.flame.tree.childStart[0]), 1, 'merged: one __libc_start_main under all');
  const rows = await page.locator('.ks-functable-table tbody tr td:first-child').allTextContents();
  assert.ok(!rows.some((r) => r.includes('[pid')), 'process roots are not functions');
  assert.deepEqual(errors, []);
  await ctx.close();
});
