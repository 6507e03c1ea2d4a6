// Browser test of `keisoku compare` on two real recorded runs of the same
// Node server (perf with --perf-basic-prof), the second with a planted hot
// function: the first regression row and the gate box's top mover name it
// (after JIT-name normalisation), the differential flame graph opens at
// its root, both timelines are drawn on one relative axis, and the findings
// of both runs are listed as new / resolved / unchanged.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { binSupports, embeddedData, keisokuBin, launch, open, scratch, shot, write } from './helpers/browser.mjs';

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const SERVER = `const http = require('http');
const port = Number(process.argv[2]);
const plant = process.env.PLANT === '1';
function renderBody(items) {
  let s = '';
  for (let i = 0; i < items.length; i++) s += '<li>' + items[i].name + ':' + items[i].v.toFixed(2) + '</li>';
  return s;
}
function buildItems(n) {
  const items = [];
  for (let i = 0; i < n; i++) items.push({ name: 'item' + i, v: Math.sqrt(i * 7919 % 104729) });
  return items;
}
function plantedChecksum(body) {
  let h = 2166136261;
  for (let r = 0; r < 40; r++) for (let i = 0; i < body.length; i++) { h ^= body.charCodeAt(i); h = Math.imul(h, 16777619) >>> 0; }
  return h;
}
http.createServer((req, res) => {
  const body = renderBody(buildItems(300));
  res.setHeader('x-sum', String(plant ? plantedChecksum(body) : 0));
  res.end(body);
}).listen(port, '127.0.0.1');
`;

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function have(tool) {
  return spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
}

// --no-turbo-inlining: TurboFan may inline the planted function into the
// handler, whose frame then carries its time; the test is about naming
// the change across JIT tiers, so the planted function keeps its own frame.
async function record(dir, store, name, plant) {
  const script = write(join(dir, 'server.js'), SERVER);
  const port = await freePort();
  const r = spawnSync(keisokuBin(), ['run', '--target', `http://127.0.0.1:${port}/`, '-c', '4', '-d', '5s', '--name', name,
    '--server-cmd', `exec node --perf-basic-prof --no-turbo-inlining ${script} ${port}`, '--profile', 'perf', '--profile-hz', '499', '--store', store],
  // cwd: the server inherits it, and node with --perf-basic-prof writes an
  // isolate-*-v8.log there; it belongs in the scratch dir, not in web/.
  { encoding: 'utf8', cwd: dir, env: { ...process.env, PLANT: plant ? '1' : '0' }, maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, `${name}: ${r.stderr}`);
}

test('compare of two real Node runs: the planted function leads, the graph opens at its root', async () => {
  assert.ok(binSupports('compare'), 'KEISOKU_BIN must point at a keisoku with `compare`');
  assert.ok(have('node') && have('perf'), 'node and perf are required: run scripts/setup.sh');
  const dir = scratch('compare-real');
  const store = join(dir, 'runs.db');
  spawnSync('rm', ['-f', store]);
  await record(dir, store, 'node-base', false);
  await record(dir, store, 'node-planted', true);
  const html = join(dir, 'compare.html');
  const r = spawnSync(keisokuBin(), ['compare', 'node-base', 'node-planted', '-o', html, '--fail-on-regression', 'p99>+10%', '--store', store], { encoding: 'utf8' });
  assert.equal(r.status, 3, `the planted function slows every request: ${r.stderr}`);
  assert.match(r.stdout, /top mover: JS:plantedChecksum /);
  const data = embeddedData(html).comparison;

  const { page, errors, ctx } = await open(browser, html, { width: 1366, height: 900 });
  const facts = await page.evaluate(() => {
    const g = window.keisoku.flame;
    const nonBlank = (c) => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && (d[i] < 200 || d[i + 1] < 200 || d[i + 2] < 200)) n++;
      return n;
    };
    return {
      fatal: document.querySelector('.ks-fatal')?.textContent ?? null,
      mover: document.querySelector('#gate .ks-top-mover')?.textContent ?? '',
      firstRegression: document.querySelector('#profile .ks-regressions tbody tr')?.getAttribute('data-frame') ?? '',
      regressionPp: [...document.querySelectorAll('#profile .ks-regressions tbody tr')].map((tr) => ({ pp: Number(tr.getAttribute('data-self-pp')), noisy: !!tr.querySelector('.ks-noisy') })),
      zoom: g.stats().zoomNode,
      rootInView: g.rootInView(),
      findings: [...document.querySelectorAll('#findings tbody tr')].map((tr) => [tr.getAttribute('data-change'), tr.getAttribute('data-id')]),
      timelineCharts: document.querySelectorAll('#timelines canvas').length,
      timelineInk: [...document.querySelectorAll('#timelines figure')].map((f) => {
        const c = f.querySelector('canvas');
        return c ? nonBlank(c) : 0;
      }),
    };
  });
  assert.equal(facts.fatal, null);
  assert.match(facts.mover, /Top mover in the profile: JS:plantedChecksum /);
  assert.ok(facts.firstRegression.startsWith('JS:plantedChecksum '), `first regression row: ${facts.firstRegression}`);
  // Ranked by change of share, rows beyond noise first.
  const firstNoisy = facts.regressionPp.findIndex((r) => r.noisy);
  const solid = firstNoisy < 0 ? facts.regressionPp : facts.regressionPp.slice(0, firstNoisy);
  for (let i = 1; i < solid.length; i++) assert.ok(Math.abs(solid[i].pp) <= Math.abs(solid[i - 1].pp) + 1e-9, `ranked by change of self share (pp): ${JSON.stringify(solid)}`);
  if (firstNoisy >= 0) assert.ok(facts.regressionPp.slice(firstNoisy).every((r) => r.noisy), 'noisy rows last');
  assert.equal(facts.zoom, 0, 'fully zoomed out');
  assert.ok(facts.rootInView, 'the differential flame graph opens with its root in view');
  assert.deepEqual(facts.findings, data.findings.map((d) => [d.change, d.id]), 'every finding of both runs listed with its change');
  assert.ok(facts.findings.length >= 1);
  assert.ok(facts.findings.every(([c]) => ['new', 'resolved', 'unchanged'].includes(c)));
  assert.ok(facts.timelineCharts >= 3, 'rps, p99 and errors charts');
  assert.ok(facts.timelineInk[0] > 200, `throughput lines drawn: ${facts.timelineInk}`);
  assert.ok(facts.timelineInk[1] > 200, `p99 lines drawn: ${facts.timelineInk}`);
  await shot(page, 'compare-real');
  await page.locator('#profile').scrollIntoViewIfNeeded();
  await shot(page, 'compare-real-profile');
  assert.deepEqual(errors, []);
  await ctx.close();
});
