// Browser tests of the report's server-thread views (field notes §2): the
// per-thread series `thread.<comm>:<pid>:<tid>.*` become two heat strips
// (CPU and migrations, one row per thread, busiest on top, at most 16
// rows) and a table over the measured phases. A synthetic run checks the
// exact rows and numbers; a real recorded run against the demo checks
// that its worker threads show by name.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { launch, open, runBin, scratch } from './helpers/browser.mjs';
import { makeRun } from './report-fixture.mjs';
import { reportPage } from './report-page.mjs';
import { has, killAll, recordDemoRun } from './report-procs.mjs';

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
  killAll();
});

/** Mean of a thread series over the measured phases (or (from, to]), as the table computes it. */
function meanOver(run, name, range = null) {
  const s = run.series.find((x) => x.name === name);
  const inPhase = range ? (t) => t > range[0] && t <= range[1] : (t) => run.phases.some((p) => !p.warmup && t > p.start_ms && t <= p.end_ms);
  const v = s.t_ms.map((t, i) => [t, s.v[i]]).filter(([t]) => inPhase(t));
  return v.reduce((a, [, x]) => a + x, 0) / v.length;
}

/** Screenshot of the thread strips and the table only (the full page is long). */
async function shotThreads(page, name) {
  const boxes = [];
  for (const sel of ['[data-key="threads-cpu"]', '[data-key="threads-migrations"]', '#threads']) {
    const b = await page.locator(sel).boundingBox();
    if (b) boxes.push(b);
  }
  if (!boxes.length) return;
  // Boxes are relative to the viewport, a full-page clip to the page: the
  // clicks above scrolled it.
  const scrollY = await page.evaluate(() => window.scrollY);
  const y = scrollY + Math.min(...boxes.map((b) => b.y));
  const bottom = scrollY + Math.max(...boxes.map((b) => b.y + b.height));
  await page.screenshot({ path: join(scratch('screens'), `${name}.png`), fullPage: true, clip: { x: 0, y, width: 1366, height: Math.min(1600, bottom - y) } });
}

/** What the page shows of the thread views. */
async function threadFacts(page) {
  return page.evaluate(() => {
    const specs = window.keisoku.timelines.specs;
    const strip = (key) => specs.find((s) => s.key === key) ?? null;
    const rows = (key) => strip(key)?.rows.map((r) => r.label) ?? null;
    return {
      keys: specs.map((s) => s.key),
      cpuRows: rows('threads-cpu'),
      migRows: rows('threads-migrations'),
      cpuNote: strip('threads-cpu')?.note ?? '',
      migMax: strip('threads-migrations')?.max ?? null,
      table: [...document.querySelectorAll('#threads tbody tr')].map((tr) => [...tr.children].map((td) => td.textContent)),
      title: document.querySelector('#threads h3')?.textContent ?? '',
      head: [...document.querySelectorAll('#threads thead th')].map((th) => th.textContent.replace(/ [▼▲]$/, '')),
      extra: [...document.querySelectorAll('#timelines select option')].map((o) => o.value).filter((v) => v.startsWith('thread.')),
      fatal: document.querySelector('.ks-fatal')?.textContent ?? null,
    };
  });
}

test('thread strips show the busiest 16 threads on top and the table every thread', async () => {
  const run = makeRun({ samples: 2000, threads: 20, seed: 3 });
  const html = reportPage('report-threads', run);
  for (const colorScheme of ['light', 'dark']) {
    const { page, errors, ctx } = await open(browser, html, { width: 1366, height: 900, colorScheme });
    const f = await threadFacts(page);
    assert.equal(f.fatal, null);
    // After the per-core strips, the two thread strips.
    assert.ok(f.keys.indexOf('threads-cpu') > f.keys.indexOf('proc-core'), `${f.keys}`);
    assert.ok(f.keys.includes('threads-migrations'), `${f.keys}`);
    // Busiest first (rows are listed bottom-up, so reverse): worker k has 1/(k+1) of the load.
    const top = [...f.cpuRows].reverse();
    assert.equal(top.length, 16);
    assert.deepEqual(
      top,
      Array.from({ length: 16 }, (_, k) => `demo-prefork-${k} ${4250 + k}`),
    );
    assert.deepEqual(f.migRows, f.cpuRows, 'the migration strip has the same rows');
    assert.match(f.cpuNote, /4 quieter threads not shown/);
    // The migration colours scale to the 98th percentile of the shown threads' rates.
    const shownTids = new Set(top.map((r) => r.split(' ')[1]));
    const rates = run.series
      .filter((s) => /^thread\..*\.migrations$/.test(s.name) && shownTids.has(s.name.split(':')[2].split('.')[0]))
      .flatMap((s) => s.v)
      .sort((a, b) => a - b);
    const p98 = rates[Math.floor(rates.length * 0.98)];
    assert.ok(Math.abs(f.migMax - p98) < 1e-9 && p98 < rates[rates.length - 1], `${f.migMax} vs ${p98}`);
    // The table: all 20 threads, busiest first, with the numbers from the JSON.
    assert.equal(f.table.length, 20);
    assert.deepEqual(f.head, ['thread', 'pid', 'tid', 'CPU s', 'CPU %', 'migrations/s', 'voluntary/s', 'involuntary/s', 'run queue ms/s', 'cores seen']);
    assert.deepEqual(f.table[0].slice(0, 3), ['demo-prefork-0', '4242', '4250']);
    const cpu = meanOver(run, 'thread.demo-prefork-0:4242:4250.cpu');
    assert.equal(f.table[0][4], `${cpu.toFixed(1)}%`);
    const secs = run.phases.reduce((a, p) => a + (p.end_ms - p.start_ms) / 1000, 0);
    assert.equal(f.table[0][3], ((cpu / 100) * secs).toFixed(2));
    const mig = meanOver(run, 'thread.demo-prefork-0:4242:4250.migrations');
    assert.ok(Math.abs(parseFloat(f.table[0][5]) - mig) <= 0.05 * mig + 0.01, `${f.table[0][5]} vs ${mig}`);
    // Worker 0 moved over every core; worker 1 stayed on core 1.
    assert.equal(f.table[0][9], '0 1 2 3');
    assert.equal(f.table[1][9], '1');
    // Thread series do not flood the "add a chart" list.
    assert.deepEqual(f.extra, []);
    // A selected range (here from elsewhere on the page) recomputes the table for it; Esc resets.
    assert.match(f.title, /over the measured phases/);
    await page.evaluate(() => window.keisoku.timelines.setRange({ fromMs: 48000, toMs: 60000 }));
    const sel = await threadFacts(page);
    assert.match(sel.title, /from 48 s to 60 s \(selected\)/);
    const inRange = meanOver(run, 'thread.demo-prefork-0:4242:4250.cpu', [48000, 60000]);
    assert.equal(sel.table[0][4], `${inRange.toFixed(1)}%`);
    assert.equal(sel.table[0][3], ((inRange / 100) * 12).toFixed(2));
    assert.notEqual(sel.table[0][4], f.table[0][4]);
    await page.keyboard.press('Escape');
    assert.deepEqual((await threadFacts(page)).table, f.table);
    // Any column sorts: tid descending, then ascending; back to CPU s.
    const tids = async () => (await threadFacts(page)).table.map((r) => Number(r[2]));
    await page.locator('#threads thead th', { hasText: 'tid' }).click();
    assert.deepEqual(await tids(), Array.from({ length: 20 }, (_, k) => 4269 - k));
    await page.locator('#threads thead th', { hasText: 'tid' }).click();
    assert.deepEqual(await tids(), Array.from({ length: 20 }, (_, k) => 4250 + k));
    await page.locator('#threads thead th', { hasText: 'CPU s' }).click();
    assert.deepEqual((await threadFacts(page)).table, f.table);
    await shotThreads(page, `report-threads-${colorScheme}`);
    assert.deepEqual(errors, []);
    await ctx.close();
  }
});

test('a run without thread series has no thread views', async () => {
  const html = reportPage('report-no-threads', makeRun({ samples: 0, threads: 0, findings: false }));
  const { page, errors, ctx } = await open(browser, html);
  const f = await threadFacts(page);
  assert.ok(!f.keys.some((k) => k.startsWith('threads-')), `${f.keys}`);
  assert.equal(f.table.length, 0);
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('a real recorded run shows the demo workers as thread rows', async (t) => {
  if (!has('run', '--target') || !has('demo', '--serve')) {
    t.skip('KEISOKU_BIN lacks `run` or `demo --serve`');
    return;
  }
  const { rec, store, dir } = await recordDemoRun('report-threads-real', '/bid', ['--profile', 'none', '--sweep-connections', '2..4:2', '--step-duration', '2s']);
  assert.ok(rec.status === 0 || rec.status === 3, `keisoku run: ${rec.stderr}`);
  const html = join(dir, 'report-threads-real.html');
  runBin(['report', 'report-threads-real', '--store', store, '-o', html]);
  const { page, errors, ctx } = await open(browser, html, { width: 1366, height: 900 });
  const f = await threadFacts(page);
  assert.equal(f.fatal, null);
  assert.ok(f.keys.includes('threads-cpu'), `no thread strip: ${f.keys}`);
  // The demo's request threads are its event-loop workers, named demo-worker-N.
  assert.ok(f.cpuRows.some((r) => /^demo-worker-\d+ \d+$/.test(r)), `${f.cpuRows}`);
  assert.ok(f.table.length >= 1 && f.table.length <= 32);
  const top = f.table[0];
  assert.ok(parseFloat(top[3]) > 0, `the busiest thread used CPU: ${top}`);
  await shotThreads(page, 'report-threads-real');
  assert.deepEqual(errors, []);
  await ctx.close();
});
