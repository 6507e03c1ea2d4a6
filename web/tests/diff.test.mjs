// Browser tests of the differential flame graph page (`keisoku diff` HTML):
// red where AFTER grew, blue where it shrank, vanished stacks still drawn,
// the legend states the mode, and the regression tables list the changes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, open, shot } from './helpers/browser.mjs';
import { diffPage } from './helpers/pages.mjs';
import { syntheticProfile } from './helpers/profiles.mjs';

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const base = syntheticProfile({ samples: 20000, frames: 400, seconds: 4, threads: 2, seed: 5, idleShare: 0 });

/**
 * Adds two stacks under `main` with their own frames: "vanishing_fn"
 * (present only in BEFORE) and "growing_fn" (4x in AFTER).
 */
function withExtra(p, vanishing, growing) {
  const frames = { name: [...p.frames.name, 'vanishing_fn', 'growing_fn'], module: [...p.frames.module, 'server', 'server'], kind: [...p.frames.kind, 1, 1] };
  const nf = p.frames.name.length;
  const nn = p.nodes.parent.length;
  const nodes = { parent: [...p.nodes.parent, 1, 1], frame: [...p.nodes.frame, nf, nf + 1] };
  const node = [...p.samples.node];
  const time = [...p.samples.time_ms];
  const thread = [...p.samples.thread];
  const last = time.at(-1);
  for (let i = 0; i < vanishing; i++) node.push(nn), time.push(last), thread.push(0);
  for (let i = 0; i < growing; i++) node.push(nn + 1), time.push(last), thread.push(0);
  return { ...p, frames, nodes, samples: { node, weight: null, time_ms: time, thread } };
}

const vanished = ['__libc_start_main', 'main', 'vanishing_fn'];
const grown = ['__libc_start_main', 'main', 'growing_fn'];
const beforeP = withExtra(base, 300, 200);
const changed = { ...withExtra(base, 0, 800), title: 'after' };


async function colourCounts(page) {
  return page.evaluate(() => {
    const c = document.querySelector('.ks-flame-canvas');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let red = 0;
    let blue = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (d[i + 3] === 0) continue;
      if (d[i] - d[i + 2] > 60) red++;
      else if (d[i + 2] - d[i] > 60) blue++;
    }
    return { red, blue };
  });
}

/** Pixel colour in the middle of a node's rectangle. */
async function nodePixel(page, path) {
  return page.evaluate((names) => {
    const fg = window.keisoku.flame;
    const t = fg.tree;
    let n = 0;
    for (const name of names) {
      let next = -1;
      for (let k = t.childStart[n]; k < t.childStart[n + 1]; k++) if (t.name(t.childList[k]) === name) next = t.childList[k];
      if (next < 0) return null;
      n = next;
    }
    const r = fg.frameRect(n);
    const c = document.querySelector('.ks-flame-canvas');
    const dpr = c.width / c.clientWidth;
    const px = c.getContext('2d').getImageData(Math.floor((r.x + r.w / 2) * dpr), Math.floor((r.y + r.h / 2) * dpr), 1, 1).data;
    const dt = fg.diffTree;
    return { w: r.w, rgb: [px[0], px[1], px[2]], before: dt.beforeTotal[n], after: dt.afterTotal[n] };
  }, path);
}

test('diff page: red grew, blue shrank, vanished stack drawn, legend states absolute mode', async () => {
  const { html, via } = diffPage('diff-absolute', beforeP, changed);
  const { page, errors, ctx } = await open(browser, html);
  const { red, blue } = await colourCounts(page);
  assert.ok(red > 200 && blue > 200, `red ${red} and blue ${blue} pixels (${via})`);
  const vv = await nodePixel(page, vanished);
  assert.ok(vv, `vanished stack ${vanished.join(';')} is in the merged tree`);
  assert.equal(vv.after, 0);
  assert.ok(vv.before > 30);
  assert.ok(vv.w > 0.5, 'vanished stack has width');
  assert.ok(vv.rgb[2] - vv.rgb[0] > 60, `vanished stack drawn blue: ${vv.rgb}`);
  const g = await nodePixel(page, grown);
  assert.ok(g.after > g.before * 3.5);
  assert.ok(g.rgb[0] - g.rgb[2] > 60, `grown stack drawn red: ${g.rgb}`);
  assert.match(await page.locator('.ks-flame-legend').textContent(), /mode: absolute/);
  // Tables: the grown function among regressions, the vanished one among improvements.
  const regressions = await page.locator('.ks-regressions td.ks-name').allTextContents();
  const improvements = await page.locator('.ks-improvements td.ks-name').allTextContents();
  assert.ok(regressions.some((t) => t.startsWith(grown.at(-1))), `${grown.at(-1)} in ${regressions.slice(0, 5)}`);
  assert.ok(improvements.some((t) => t.startsWith(vanished.at(-1))), `${vanished.at(-1)} in ${improvements.slice(0, 5)}`);
  // Clicking a table row searches for that function in the graph.
  await page.locator('.ks-regressions td.ks-name', { hasText: grown.at(-1) }).first().click();
  assert.ok((await page.evaluate(() => window.keisoku.flame.stats().matched.nodes)) >= 1);
  await shot(page, 'diff-absolute');
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('normalised diff says so in the legend and compares shares', async () => {
  const { html } = diffPage('diff-normalized', beforeP, changed, { normalize: true });
  const { page, errors, ctx } = await open(browser, html);
  assert.match(await page.locator('.ks-flame-legend').textContent(), /normalised/);
  const root = await page.evaluate(() => {
    const d = window.keisoku.flame.diffTree;
    return { delta: d.delta[0], mode: d.mode };
  });
  assert.equal(root.mode, 'normalized');
  assert.equal(root.delta, 0, 'shares of the root never change');
  await shot(page, 'diff-normalized');
  assert.deepEqual(errors, []);
  await ctx.close();
});
