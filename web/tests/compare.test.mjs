// Browser test of `keisoku compare`: the gate's verdict and exit status,
// headline and route deltas, both sweeps on one chart, and the differential
// flame graph (red where B grew).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { binSupports, keisokuBin, launch, open, scratch, shot, write } from './helpers/browser.mjs';
import { makeRun } from './report-fixture.mjs';

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

test('compare: gate fails with exit 3 and the page shows deltas, sweeps and the diff', async () => {
  assert.ok(binSupports('compare'), 'KEISOKU_BIN must point at a keisoku with `compare`');
  const dir = scratch('compare');
  const a = write(join(dir, 'a.json'), JSON.stringify(makeRun({ seed: 1, name: 'main', id: '20261121-200000-aaaa' })));
  const b = write(join(dir, 'b.json'), JSON.stringify(makeRun({ seed: 2, name: 'feature-x', id: '20261121-210000-bbbb', slower: 1.3 })));
  const html = join(dir, 'compare.html');
  const r = spawnSync(keisokuBin(), ['compare', a, b, '-o', html, '--fail-on-regression', 'p99>+10%,rps<-50%'], { encoding: 'utf8' });
  assert.equal(r.status, 3, r.stderr);
  assert.match(r.stdout, /FAIL\s+p99>\+10%/);
  assert.match(r.stdout, /PASS\s+rps<-50%/);
  assert.match(r.stdout, /regression gate: FAIL/);

  const { page, errors, ctx } = await open(browser, html, { width: 1366, height: 768 });
  const facts = await page.evaluate(() => ({
    banner: document.querySelector('#gate .ks-verdict-banner')?.textContent ?? '',
    clauses: [...document.querySelectorAll('#gate tbody tr')].map((tr) => tr.textContent),
    deltas: [...document.querySelectorAll('.ks-deltas tbody tr')].map((tr) => tr.getAttribute('data-metric')),
    p99: document.querySelector('.ks-deltas tr[data-metric="p99"] td:last-child')?.className ?? '',
    sweeps: document.querySelectorAll('#sweep canvas').length,
    sweepSeries: document.querySelectorAll('#sweep .u-legend .u-series').length,
    routes: document.querySelectorAll('#routes tbody tr').length,
    isDiff: window.keisoku.flame?.isDiff ?? false,
    regressions: [...document.querySelectorAll('#profile .ks-regressions tbody td.ks-name')].map((td) => td.firstChild?.textContent ?? ''),
    fatal: document.querySelector('.ks-fatal')?.textContent ?? null,
  }));
  assert.equal(facts.fatal, null);
  assert.match(facts.banner, /FAIL/);
  assert.equal(facts.clauses.length, 2);
  for (const m of ['rps', 'requests', 'p50', 'p99']) assert.ok(facts.deltas.includes(m), `delta ${m}: ${facts.deltas}`);
  assert.match(facts.p99, /ks-delta-worse/, 'p99 grew: shown as worse');
  assert.ok(facts.sweeps >= 2);
  assert.ok(facts.sweepSeries >= 2 + 4, 'both runs drawn on the same axes');
  assert.equal(facts.routes, 3);
  assert.ok(facts.isDiff, 'a differential flame graph');
  assert.ok(facts.regressions.includes('json_parse'), `regression table names json_parse: ${facts.regressions}`);
  // B's json_parse weight is 1.3x: its frame is drawn red (grew).
  const red = await page.evaluate(() => {
    const g = window.keisoku.flame;
    const tree = g.tree;
    for (let n = 0; n < tree.n; n++) {
      if (g.tree.name(n) !== 'json_parse') continue;
      const r = g.frameRect(n);
      if (!r) continue;
      const canvas = document.querySelector('#profile canvas.ks-flame-canvas');
      const ctx = canvas.getContext('2d');
      const k = canvas.width / canvas.getBoundingClientRect().width;
      const px = ctx.getImageData(Math.floor((r.x + r.w / 2) * k), Math.floor((r.y + r.h / 2) * k), 1, 1).data;
      return [px[0], px[1], px[2]];
    }
    return null;
  });
  assert.ok(red, 'json_parse is drawn');
  assert.ok(red[0] > red[2] + 30, `json_parse drawn red-ish: rgb ${red}`);
  await shot(page, 'compare');
  assert.deepEqual(errors, []);
  await ctx.close();

  // The same runs under a gate they meet: exit 0.
  const ok = spawnSync(keisokuBin(), ['compare', a, b, '-o', html, '--fail-on-regression', 'p99>+100%'], { encoding: 'utf8' });
  assert.equal(ok.status, 0, ok.stderr);
  // A malformed gate is bad input (exit 2), named in one line.
  const bad = spawnSync(keisokuBin(), ['compare', a, b, '-o', html, '--fail-on-regression', 'p99>>10'], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /p99>>10/);
});
