// `keisoku serve` for a team that measures every deploy: five real
// `keisoku run`s of one name against a small local server (tags commit=a..e,
// some HTTP 503), another name, and a run named with HTML-breaking text.
// The list draws a trend line per metric, shows the SLO verdict, sorts and
// groups, deletes only after a confirmation, refuses cross-site deletes, and
// stays one line per run on a 390 px phone.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { rmSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { keisokuBin, launch, scratch, shot } from './helpers/browser.mjs';
import { has, killAll, startAndMatch, stop } from './report-procs.mjs';

const HOSTILE = '<!--x </script><script>alert(1)</script>';

let browser;
let app;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
  app?.kill('SIGKILL');
  killAll();
});

/** A Python server answering 200, and 503 for a third of /busy; resolves
 * with its base URL once it prints the port it listens on. */
function startApp(dir) {
  const script = join(dir, 'app.py');
  writeFileSync(script, `import http.server, random, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        busy = self.path.startswith("/busy") and random.random() < 0.3
        body = b"busy" if busy else b'{"ok":true}'
        self.send_response(503 if busy else 200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
`);
  app = spawn('python3', [script], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const rl = createInterface({ input: app.stdout });
    rl.once('line', (l) => resolve(`http://127.0.0.1:${l.trim()}`));
    app.once('exit', (c) => reject(new Error(`app.py exited ${c}`)));
  });
}

/** Raw HTTP so the Host and Origin headers are exactly as given. */
function raw(base, method, path, headers) {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method, path, headers }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Pixels of a chart's canvas close to its series colour. */
function inkScript() {
  return (window.keisoku.trends ?? []).map((t) => {
    const c = t.plot.ctx.canvas;
    const img = t.plot.ctx.getImageData(0, 0, c.width, c.height).data;
    const m = /#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})/i.exec(t.plot.series[1].stroke());
    const [R, G, B] = m.slice(1).map((x) => parseInt(x, 16));
    let ink = 0;
    for (let i = 0; i < img.length; i += 4) {
      if (img[i + 3] > 200 && Math.abs(img[i] - R) + Math.abs(img[i + 1] - G) + Math.abs(img[i + 2] - B) < 60) ink++;
    }
    return { name: t.name, metric: t.metric, labels: t.labels, points: t.plot.data[1].filter((v) => v !== null).length, ink };
  });
}

test('serve: trends per name, SLO column, sorting, grouping, confirmed delete, cross-site refused, phone layout', async () => {
  assert.ok(has('serve', '--allow-host'), 'KEISOKU_BIN must point at a keisoku whose serve has --allow-host');
  const dir = scratch('serve-trend');
  const store = join(dir, 'runs.db');
  for (const f of [store, `${store}-wal`, `${store}-shm`]) rmSync(f, { force: true });
  const url = await startApp(dir);

  const record = (name, args) => {
    const r = spawnSync(keisokuBin(), ['run', '--target', `${url}/busy`, '-d', '1s', '--name', name, '--store', store, ...args], { encoding: 'utf8', timeout: 60000 });
    // 3: the SLO failed, which is what commit=d is for.
    assert.ok(r.status === 0 || r.status === 3, `run ${name} ${args}: exit ${r.status}\n${r.stderr}`);
  };
  const commits = ['a', 'b', 'c', 'd', 'e'];
  commits.forEach((c, i) => {
    const slo = c === 'd' ? ['--slo', 'p99<=1us'] : c === 'e' ? [] : ['--slo', 'p99<=10s'];
    record('checkout', ['-c', String(i + 1), '--tag', `commit=${c}`, ...slo]);
  });
  record('search', ['-c', '1', '--tag', 'commit=a']);
  record(HOSTILE, ['-c', '1', '--tag', `note=${HOSTILE}`]);
  app.kill('SIGTERM');

  const { child: server, m } = await startAndMatch(['serve', '--addr', '127.0.0.1:0', '--store', store], /(http:\/\/127\.0\.0\.1:(\d+))\//);
  const base = m[1];
  const port = m[2];
  const ctx = await browser.newContext({ viewport: { width: 1366, height: 900 } });
  const page = await ctx.newPage();
  const errors = [];
  page.on('console', (msg) => msg.type() === 'error' && errors.push(msg.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${base}/`);
  await page.waitForFunction(() => window.keisoku !== undefined || document.querySelector('.ks-fatal'));
  assert.equal(await page.locator('.ks-fatal').count(), 0, 'the hostile run name does not break the list');

  // Every run listed, grouped by name (three groups); the hostile name is text.
  assert.equal(await page.locator('tr[data-run]').count(), 7);
  assert.equal(await page.locator('tr.ks-group').count(), 3);
  const names = await page.locator('tr[data-run] td:nth-child(3)').allTextContents();
  assert.ok(names.includes(HOSTILE), `the hostile name shown as text: ${names}`);

  // Trends: one figure (the only name with two runs or more), three charts,
  // each with five points on a drawn line labelled by commit.
  const trends = await page.evaluate(inkScript);
  assert.deepEqual(trends.map((t) => `${t.name}/${t.metric}`), ['checkout/p99', 'checkout/rps', 'checkout/errors']);
  for (const t of trends) {
    assert.equal(t.points, 5, `${t.metric}: five runs`);
    assert.deepEqual(t.labels, commits, `${t.metric}: x labelled by commit`);
    assert.ok(t.ink > 400, `${t.metric}: a line is drawn (${t.ink} px of its colour)`);
  }
  const rowOf = (c) => page.locator('tr[data-run]', { hasText: `commit=${c}` }).filter({ hasText: 'checkout' });
  // The SLO column: pass, fail, and none given.
  assert.equal((await rowOf('a').locator('td.ks-slo').textContent()).trim(), 'pass');
  assert.equal((await rowOf('d').locator('td.ks-slo').textContent()).trim(), 'fail');
  assert.match(await rowOf('d').locator('td.ks-slo').getAttribute('title'), /failed: p99<=/);
  assert.equal((await rowOf('e').locator('td.ks-slo').textContent()).trim(), '—');
  // Errors count 503s.
  const errCells = await page.locator('tr[data-run] td.ks-bad[title*="5xx"]').count();
  assert.ok(errCells >= 5, `runs against /busy show their 503s as errors (${errCells})`);
  await shot(page, 'serve-trend-desktop');

  // Sorting: ungrouped, by p99 descending then ascending.
  await page.locator('label', { hasText: 'group by name' }).locator('input').uncheck();
  assert.equal(await page.locator('tr.ks-group').count(), 0);
  const p99Order = async () => page.evaluate(() => {
    const byId = new Map(window.keisoku.runs().map((r) => [r.id, r.p99_ms]));
    return [...document.querySelectorAll('tr[data-run]')].map((tr) => byId.get(tr.dataset.run));
  });
  await page.locator('th[data-col="p99"]').click();
  assert.equal(await page.locator('th[data-col="p99"]').getAttribute('aria-sort'), 'descending');
  let order = await p99Order();
  assert.deepEqual(order, [...order].sort((a, b) => b - a), `p99 descending: ${order}`);
  await page.locator('th[data-col="p99"]').click();
  assert.equal(await page.locator('th[data-col="p99"]').getAttribute('aria-sort'), 'ascending');
  order = await p99Order();
  assert.deepEqual(order, [...order].sort((a, b) => a - b), `p99 ascending: ${order}`);
  await page.locator('label', { hasText: 'group by name' }).locator('input').check();

  // Delete: Cancel keeps the run; confirming removes it from the list,
  // the store and the trend.
  const victim = await rowOf('e').getAttribute('data-run');
  await rowOf('e').getByRole('button', { name: /delete/ }).click();
  assert.equal(await page.locator('dialog.ks-confirm[open]').count(), 1, 'a confirmation first');
  assert.match(await page.locator('dialog.ks-confirm').textContent(), /cannot be undone/);
  await shot(page, 'serve-trend-confirm');
  await page.locator('dialog.ks-confirm').getByRole('button', { name: 'cancel' }).click();
  assert.equal(await page.locator(`tr[data-run="${victim}"]`).count(), 1);
  assert.ok((await (await fetch(`${base}/api/runs`)).text()).includes(victim), 'Cancel deleted nothing');
  await rowOf('e').getByRole('button', { name: /delete/ }).click();
  await page.locator('dialog.ks-confirm').getByRole('button', { name: 'delete' }).click();
  await page.waitForFunction((id) => !document.querySelector(`tr[data-run="${id}"]`), victim);
  assert.match(await page.locator('.ks-status').textContent(), /deleted/);
  assert.ok(!(await (await fetch(`${base}/api/runs`)).text()).includes(victim), 'gone from the store');
  const after = await page.evaluate(inkScript);
  assert.deepEqual(after[0].labels, ['a', 'b', 'c', 'd'], 'the trend lost the deleted run');

  // Cross-site: a page on another origin cannot delete, even knowing the
  // token; nor can a script without the token or with a foreign Origin,
  // nor one whose name was rebound to us.
  const target = await rowOf('d').getAttribute('data-run');
  const token = await page.evaluate(() => JSON.parse(document.getElementById('keisoku-data').textContent).token);
  // The other site: a page served from another port of this machine.
  const evil = createServer((_req, res) => res.end('<!doctype html><title>elsewhere</title>'));
  await new Promise((r) => evil.listen(0, '127.0.0.1', r));
  const other = await ctx.newPage();
  await other.goto(`http://127.0.0.1:${evil.address().port}/`);
  const tried = await other.evaluate(async ({ base, id, token }) => {
    const out = [];
    try {
      const r = await fetch(`${base}/api/runs/${id}`, { method: 'DELETE', headers: { 'X-Keisoku-Token': token } });
      out.push(`delete ${r.status}`);
    } catch (e) {
      out.push('delete blocked');
    }
    await fetch(`${base}/api/runs/${id}/delete`, { method: 'POST', mode: 'no-cors' }).catch(() => {});
    return out;
  }, { base, id: target, token });
  assert.deepEqual(tried, ['delete blocked'], 'the browser blocked the cross-origin DELETE');
  evil.close();
  for (const [headers, status] of [
    [{ Host: `127.0.0.1:${port}` }, 403],
    [{ Host: `127.0.0.1:${port}`, 'X-Keisoku-Token': token, Origin: 'http://evil.example' }, 403],
    [{ Host: `127.0.0.1:${port}`, 'X-Keisoku-Token': token, 'Sec-Fetch-Site': 'cross-site' }, 403],
    [{ Host: `evil.example:${port}`, 'X-Keisoku-Token': token }, 421],
  ]) {
    const r = await raw(base, 'DELETE', `/api/runs/${target}`, headers);
    assert.equal(r.status, status, `${JSON.stringify(headers)}: ${r.body}`);
  }
  const rebound = await raw(base, 'GET', `/api/runs/${target}`, { Host: `evil.example:${port}` });
  assert.equal(rebound.status, 421, 'a rebound name cannot read a run');
  assert.ok((await (await fetch(`${base}/api/runs`)).text()).includes(target), 'nothing cross-site deleted it');
  const head = await fetch(`${base}/`);
  assert.match(head.headers.get('content-security-policy'), /frame-ancestors 'none'/);
  assert.equal(head.headers.get('x-content-type-options'), 'nosniff');

  // A phone: one line per run (the table scrolls sideways), charts wrap.
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const pp = await phone.newPage();
  pp.on('pageerror', (e) => errors.push(String(e)));
  await pp.goto(`${base}/`);
  await pp.waitForFunction(() => window.keisoku !== undefined);
  const tallest = await pp.evaluate(() => Math.max(...[...document.querySelectorAll('tr[data-run]')].map((tr) => tr.getBoundingClientRect().height)));
  assert.ok(tallest < 40, `rows stay one line at 390 px (tallest ${tallest} px)`);
  const overflow = await pp.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `the page itself does not scroll sideways (${overflow} px)`);
  await shot(pp, 'serve-trend-phone');
  await phone.close();

  assert.deepEqual(errors, []);
  await ctx.close();
  assert.equal(await stop(server), 0, 'Ctrl-C stops serve cleanly');
});
