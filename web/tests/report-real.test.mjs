// Browser tests of the report on REAL runs recorded at test time (issue 13):
// nginx with an LTSV access log and a route answering 503 (the client's and
// the log's series sit on different sub-second clocks), and a Python
// service profiled with py-spy. They assert what a user sees: every
// timeline series with data draws a line, 5xx count as errors in the
// verdict, the first screen (1280x800) holds verdict, knee and the top
// findings, a finding's click sets the range (and the URL), and the 390 px
// phone view does not scroll sideways.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { launch, open, runBin, scratch, shot, keisokuBin, templatePage, write } from './helpers/browser.mjs';
import { has } from './report-procs.mjs';

let browser;
const groups = [];
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
  // Servers run in their own process groups; the group goes, workers too.
  for (const pid of groups) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
});

function which(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).stdout.trim() || null;
}

/** Resolves once something accepts connections on the port (the signal), rejects after 20 s. */
function waitPort(port, child) {
  const deadline = Date.now() + 20000;
  return new Promise((resolve, reject) => {
    const tryOnce = () => {
      if (child.exitCode !== null) return reject(new Error(`server exited ${child.exitCode}`));
      const s = createConnection({ host: '127.0.0.1', port });
      s.once('connect', () => {
        s.destroy();
        resolve();
      });
      s.once('error', () => {
        s.destroy();
        if (Date.now() > deadline) reject(new Error(`nothing listens on ${port}`));
        else setTimeout(tryOnce, 50);
      });
    };
    tryOnce();
  });
}

/** Starts a server in its own process group; resolves with the child once its port accepts. */
async function startServer(cmd, args, port) {
  const child = spawn(cmd, args, { stdio: 'ignore', detached: true });
  groups.push(child.pid);
  await waitPort(port, child);
  return child;
}

/**
 * Runs `keisoku ARGS` in its own process group (so a server it starts with
 * --server-cmd goes with it); after `ms` the group is killed and the run
 * counts as failed, so a hung recording fails the test instead of blocking it.
 */
function keisoku(args, ms = 120000) {
  const child = spawn(keisokuBin(), args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  groups.push(child.pid);
  let stderr = '';
  child.stdout.resume();
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      stderr += `\n(killed after ${ms} ms)`;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }, ms);
    child.on('exit', (code, sig) => {
      clearTimeout(timer);
      resolve({ status: code ?? sig, stderr });
    });
  });
}

/**
 * The page of a stored run: `keisoku report`, or (KEISOKU_REPORT_TEMPLATE=1,
 * for a binary built before the current web/) the exported Run JSON in the
 * same template with the current bundle.
 */
function reportOf(name, store, dir) {
  const html = join(dir, `${name}.html`);
  if (process.env.KEISOKU_REPORT_TEMPLATE === '1') {
    const json = join(dir, `${name}.json`);
    runBin(['export', name, '--store', store, '-o', json]);
    const run = JSON.parse(readFileSync(json, 'utf8'));
    write(html, templatePage('report', 'report', JSON.stringify({ served: false, range_ms: null, run })));
  } else runBin(['report', name, '--store', store, '-o', html]);
  return html;
}

/**
 * Timeline series that have data (two or more numbers) but whose line
 * paints no pixel: each series' stroke path is drawn as uPlot draws it
 * (through its gap clip) on a blank canvas and the painted pixels counted.
 * A series whose points never join (every other point a gap, as when two
 * clocks were merged into one table) paints nothing.
 */
function undrawn(page, keys) {
  return page.evaluate((keys) => {
    const out = { checked: [], undrawn: [] };
    const tl = window.keisoku.timelines;
    tl.charts.forEach((u, ci) => {
      const spec = tl.specs[ci];
      if (spec.kind !== 'lines' || !keys.includes(spec.key)) return;
      for (let i = 1; i < u.series.length; i++) {
        const vals = u.data[i].filter((v) => typeof v === 'number' && Number.isFinite(v));
        if (vals.length < 2) continue;
        const paths = u.series[i]._paths;
        const c = document.createElement('canvas');
        c.width = u.ctx.canvas.width;
        c.height = u.ctx.canvas.height;
        const ctx = c.getContext('2d');
        let px = 0;
        if (paths?.stroke) {
          ctx.save();
          if (paths.clip) ctx.clip(paths.clip);
          ctx.lineWidth = 2;
          ctx.strokeStyle = '#000';
          ctx.stroke(paths.stroke);
          ctx.restore();
          const d = ctx.getImageData(0, 0, c.width, c.height).data;
          for (let k = 3; k < d.length; k += 4) if (d[k] > 0) px++;
        }
        const name = `${spec.key}/${u.series[i].label}`;
        out.checked.push(name);
        // A line across even a few seconds paints far more than this.
        out.px = out.px ?? {};
        out.px[name] = px;
        if (px < 20) out.undrawn.push(`${name} (${vals.length} values, ${px} px)`);
      }
    });
    return out;
  }, keys);
}

/** What the first screen shows, with each element's bottom edge in px. */
function firstScreen(page) {
  return page.evaluate(() => {
    const bottom = (el) => (el ? Math.round(el.getBoundingClientRect().bottom + window.scrollY) : null);
    const tiles = [...document.querySelectorAll('#verdict .ks-stat')].map((s) => ({ label: s.querySelector('.ks-stat-label')?.textContent, value: s.querySelector('.ks-stat-value')?.textContent }));
    return {
      banner: document.querySelector('.ks-verdict-banner')?.textContent ?? null,
      bannerBottom: bottom(document.querySelector('.ks-verdict-banner')),
      tiles,
      split: document.querySelector('.ks-error-split')?.textContent ?? null,
      knee: document.querySelector('.ks-knee')?.textContent ?? null,
      kneeBottom: bottom(document.querySelector('.ks-knee')),
      top: [...document.querySelectorAll('.ks-top-finding')].map((e) => ({ text: e.textContent, bottom: bottom(e) })),
      metaFolded: !!document.querySelector('details.ks-meta-box:not([open]) .ks-meta'),
    };
  });
}

test('nginx with an LTSV access log and a 503 route: lines drawn, 5xx counted, the answer on the first screen', async (t) => {
  const nginx = which('nginx');
  if (!nginx || !has('run', '--access-log')) {
    t.skip(!nginx ? 'nginx is not installed (scripts/setup.sh installs it)' : 'KEISOKU_BIN lacks `run --access-log`');
    return;
  }
  const dir = scratch('report-real-nginx');
  const port = 18160;
  for (const d of ['body', 'proxy', 'fcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, d), { recursive: true });
  const log = join(dir, 'access.log');
  rmSync(log, { force: true });
  const conf = write(
    join(dir, 'nginx.conf'),
    `worker_processes 2;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log;
events { worker_connections 1024; }
http {
  log_format ltsv "time:$time_local\\thost:$remote_addr\\tmethod:$request_method\\turi:$request_uri\\tstatus:$status\\tsize:$body_bytes_sent\\treqtime:$request_time";
  access_log ${log} ltsv;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  server { listen 127.0.0.1:${port};
    location /ok { return 200 "hello\\n"; }
    location /busy { return 503 "busy\\n"; }
    location / { return 200 "root\\n"; }
  }
}
`,
  );
  const server = await startServer(nginx, ['-c', conf, '-p', dir], port);
  const targets = write(join(dir, 'targets.txt'), `20 GET http://127.0.0.1:${port}/ok\n1 GET http://127.0.0.1:${port}/busy\n5 GET http://127.0.0.1:${port}/\n`);
  const store = join(dir, 'runs.db');
  for (const f of [store, `${store}-wal`, `${store}-shm`]) rmSync(f, { force: true });
  const rec = await keisoku(['run', '--targets', targets, '--sweep-connections', '1..4:1', '--step-duration', '2s', '--access-log', log, '--log-format', 'ltsv', '--pid', String(server.pid), '--slo', 'p99<=50ms,errors<=1%', '--store', store, '--name', 'nginx-503']);
  assert.ok(rec.status === 0 || rec.status === 3, `keisoku run: ${rec.status} ${rec.stderr}`);
  const html = reportOf('nginx-503', store, dir);
  const { page, errors, ctx } = await open(browser, html, { width: 1280, height: 800 });
  assert.equal(await page.evaluate(() => document.querySelector('.ks-fatal')?.textContent ?? null), null);

  // The access log's 503s, counted from the file nginx wrote.
  const logged503 = readFileSync(log, 'utf8').split('\n').filter((l) => /\tstatus:503\t/.test(l)).length;
  const run = await page.evaluate(() => window.keisoku.run);
  const client5xx = run.results.status['5xx'];
  assert.ok(client5xx > 0, 'the client saw 503s');
  assert.ok(Math.abs(logged503 - client5xx) <= 16, `access log 503s ${logged503} vs client 5xx ${client5xx}`);

  // Lines: both clocks present, and every series with data draws.
  const names = run.series.map((s) => s.name);
  assert.ok(names.includes('client.rps') && names.includes('log.rps'), `client and log series: ${names.filter((n) => /^(client|log)\./.test(n))}`);
  const lines = await undrawn(page, ['rps', 'latency', 'status', 'inflight', 'route-p99']);
  assert.ok(lines.checked.includes('rps/client.rps') && lines.checked.includes('rps/log.rps'), `checked: ${lines.checked}`);
  assert.deepEqual(lines.undrawn, [], `series with data but no line: ${lines.undrawn}`);

  // The cursor shows both clocks' series: each its nearest sample, a number, not "—".
  const over = page.locator('#timelines .ks-chart[data-key="rps"] .u-over');
  await over.scrollIntoViewIfNeeded();
  const ob = await over.boundingBox();
  await page.mouse.move(ob.x + ob.width * 0.55, ob.y + ob.height / 2);
  const tip = await page.locator('#timelines .ks-chart[data-key="rps"] .ks-chart-tip').textContent();
  assert.match(tip, /client\.rps[\d.]+ ?k?/, `tooltip: ${tip}`);
  assert.match(tip, /log\.rps[\d.]+ ?k?/, `tooltip: ${tip}`);
  await page.evaluate(() => window.scrollTo(0, 0));

  // The verdict counts 5xx as errors (contract 1) and names the split.
  const fs = await firstScreen(page);
  const errTile = fs.tiles.find((x) => /^errors/.test(x.label ?? ''));
  assert.ok(errTile, `tiles: ${JSON.stringify(fs.tiles)}`);
  const shownErrors = Number(errTile.value.split(' ')[0].replaceAll(',', ''));
  const transport = typeof run.results.errors === 'number' ? run.results.errors : 0;
  assert.ok(shownErrors >= client5xx && shownErrors <= client5xx + transport, `errors tile ${errTile.value} vs 5xx ${client5xx} + transport ${transport}`);
  assert.match(fs.split ?? '', /HTTP 5xx/);
  assert.match(fs.banner ?? '', /SLO missed/, 'errors<=1% fails on ~4% 503s');

  // The first screen: verdict, knee and the top findings above 800 px; metadata folded.
  assert.ok(fs.bannerBottom < 800 && fs.kneeBottom !== null && fs.kneeBottom < 800, `banner ${fs.bannerBottom}, knee ${fs.kneeBottom}`);
  assert.match(fs.knee, /^Knee: /);
  assert.ok(run.findings.length >= 1, 'the rules found something on this run');
  assert.equal(fs.top.length, Math.min(3, run.findings.length));
  for (const f of fs.top) assert.ok(f.bottom < 800, `top finding below the fold: ${f.text} at ${f.bottom}`);
  // When the rules name the failing requests, that is one of the three shown first.
  const errorsFinding = run.findings.find((f) => /^errors/.test(f.rule ?? f.id ?? ''));
  if (errorsFinding) assert.ok(fs.top.some((f) => f.text.includes(errorsFinding.title)), `the errors finding is on the first screen: ${errorsFinding.title}`);
  assert.ok(fs.metaFolded, 'run metadata folded');
  await page.screenshot({ path: join(dir, '..', 'report-real-nginx-first.png') });
  await shot(page, 'report-real-nginx');

  // A finding with a time range: a click selects it and puts it in the URL.
  const withRange = await page.evaluate(() => [...document.querySelectorAll('.ks-top-finding')].findIndex((e) => /\d s–/.test(e.textContent)));
  if (withRange >= 0) {
    await page.locator('.ks-top-finding').nth(withRange).click();
    const after = await page.evaluate(() => ({ range: window.keisoku.range(), hash: location.hash }));
    assert.ok(after.range && after.range.toMs > after.range.fromMs, 'the finding selected its range');
    assert.match(after.hash, /^#from=\d+&to=\d+$/);
  }
  assert.deepEqual(errors, []);
  await ctx.close();

  // The phone: nothing wider than the screen.
  const phone = await open(browser, html, { width: 390, height: 844 });
  const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth);
  await shot(phone.page, 'report-real-nginx-390');
  assert.ok(overflow <= 392, `page is ${overflow} px wide on a 390 px screen`);
  assert.deepEqual(phone.errors, []);
  await phone.ctx.close();
});

test('a Python service profiled with py-spy: lines drawn and the profile on the run clock', async (t) => {
  const python = which('python3');
  const pyspy = which('py-spy');
  if (!python || !has('run', '--server-cmd')) {
    t.skip(!python ? 'python3 is not installed' : 'KEISOKU_BIN lacks `run --server-cmd`');
    return;
  }
  const dir = scratch('report-real-python');
  const port = 18161;
  const app = write(
    join(dir, 'app.py'),
    `import http.server, json, re, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        # Per-request regex compile and JSON round trip: work the profiler sees.
        pat = re.compile(r"^/(\\w+)/(\\d+)$" + "|x" * (len(self.path) % 3))
        data = json.loads(json.dumps({"items": list(range(300))}))
        code = 500 if self.path.startswith("/fail") else 200
        body = json.dumps({"n": len(data["items"]), "m": bool(pat.match(self.path))}).encode()
        self.send_response(code); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
`,
  );
  const store = join(dir, 'runs.db');
  for (const f of [store, `${store}-wal`, `${store}-shm`]) rmSync(f, { force: true });
  const targets = write(join(dir, 'targets.txt'), `9 GET http://127.0.0.1:${port}/items/42\n1 GET http://127.0.0.1:${port}/fail/1\n`);
  const args = ['run', '--server-cmd', `exec ${python} ${app} ${port}`, '--targets', targets, '-c', '4', '-d', '4s', '--store', store, '--name', 'python-app'];
  if (pyspy) args.push('--profile', 'py-spy');
  else t.diagnostic('py-spy is not installed: the run has no profile');
  const rec = await keisoku(args);
  assert.ok(rec.status === 0 || rec.status === 3, `keisoku run: ${rec.status} ${rec.stderr}`);
  const html = reportOf('python-app', store, dir);
  const { page, errors, ctx } = await open(browser, html, { width: 1280, height: 800 });
  const run = await page.evaluate(() => window.keisoku.run);
  const lines = await undrawn(page, ['rps', 'latency', 'status', 'inflight', 'route-p99']);
  assert.ok(lines.checked.includes('rps/client.rps'), `checked: ${lines.checked}`);
  assert.deepEqual(lines.undrawn, []);
  const fs = await firstScreen(page);
  const errTile = fs.tiles.find((x) => /^errors/.test(x.label ?? ''));
  assert.ok(run.results.status['5xx'] > 0, 'the /fail route answered 500');
  assert.ok(Number(errTile.value.split(' ')[0].replaceAll(',', '')) >= run.results.status['5xx'], `errors tile ${errTile.value}`);
  const prof = await page.evaluate(() => ({ samples: window.keisoku.profile.profile?.sampleCount ?? null, total: window.keisoku.profile.flame?.stats().total ?? null }));
  if (pyspy && prof.samples !== null) assert.equal(prof.total, prof.samples, 'the flame graph holds every sample');
  else t.diagnostic('no profile in this run');
  await shot(page, 'report-real-python');
  assert.deepEqual(errors, []);
  await ctx.close();
});

// The line check itself is tested: on two clocks both series draw, and a
// series with no two neighbouring points (a null in every other row, what
// the old merge made of client.rps) is flagged.
test('the line check catches a series that draws no line', async () => {
  const dir = scratch('report-real-lines');
  const t1 = Array.from({ length: 10 }, (_, i) => 1586 + i * 1000);
  const t2 = Array.from({ length: 10 }, (_, i) => 2000 + i * 1000);
  const run = {
    version: 1,
    run: { id: 'two-clocks', name: 'two-clocks', duration_ms: 12000 },
    series: [
      { name: 'client.rps', unit: '/s', t_ms: t1, v: t1.map((_, i) => 100 + i) },
      { name: 'log.rps', unit: '/s', t_ms: t2, v: t2.map((_, i) => 90 + i) },
      // A series whose own samples alternate with gaps: nothing to join.
      { name: 'client.errors', unit: '/s', t_ms: t1, v: t1.map((_, i) => (i % 2 ? null : 3)) },
    ],
  };
  const html = write(join(dir, 'two-clocks.html'), templatePage('report', 'report', JSON.stringify({ served: false, range_ms: null, run })));
  const { page, errors, ctx } = await open(browser, html, { width: 1280, height: 800 });
  const lines = await undrawn(page, ['rps']);
  assert.deepEqual(lines.undrawn.map((s) => s.split(' ')[0]), ['rps/client.errors'], `only the gappy series is flagged: ${JSON.stringify(lines.px)}`);
  assert.ok(lines.checked.includes('rps/client.rps') && lines.checked.includes('rps/log.rps'));
  assert.deepEqual(errors, []);
  await ctx.close();
});
