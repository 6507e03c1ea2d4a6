// Records a HAR 1.2 file of one page load in headless Chromium, for
// tests/bench_replay.rs: `node replay_har.mjs URL OUT.har`. Chromium has no
// HAR flag, so this drives it over the Chrome DevTools Protocol (through the
// playwright-core web/ already depends on, only to launch it and open a CDP
// session), records the Network domain's events and writes the HAR itself.
// It waits until the page says it is done (`document.title === 'done'`),
// then for every request it saw to be answered.
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [url, out] = process.argv.slice(2);
const web = process.env.KEISOKU_WEB;
if (!url || !out || !web) {
  console.error('usage: KEISOKU_WEB=web/ node replay_har.mjs URL OUT.har');
  process.exit(2);
}
const require = createRequire(join(web, 'package.json'));
const { chromium } = require('playwright-core');

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
const context = await browser.newContext();
const page = await context.newPage();
const cdp = await context.newCDPSession(page);
await cdp.send('Network.enable');
await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });

const requests = new Map();
const order = [];
cdp.on('Network.requestWillBeSent', (e) => {
  if (requests.has(e.requestId)) return; // a redirect's next hop keeps the first entry
  requests.set(e.requestId, { sent: e, status: null, done: false });
  order.push(e.requestId);
});
cdp.on('Network.responseReceived', (e) => {
  const r = requests.get(e.requestId);
  if (r) r.status = e.response;
});
const finish = (e) => {
  const r = requests.get(e.requestId);
  if (r) r.done = true;
};
cdp.on('Network.loadingFinished', finish);
cdp.on('Network.loadingFailed', finish);

await page.goto(url);
await page.waitForFunction(() => document.title === 'done', null, { timeout: 30000 });
const until = Date.now() + 30000;
while ([...requests.values()].some((r) => !r.done) && Date.now() < until) {
  await new Promise((res) => setTimeout(res, 20));
}

const entries = [];
for (const id of order) {
  const { sent, status } = requests.get(id);
  const req = sent.request;
  let text = req.postData;
  if (text === undefined && req.hasPostData) {
    try {
      text = (await cdp.send('Network.getRequestPostData', { requestId: id })).postData;
    } catch {
      text = undefined;
    }
  }
  const headers = Object.entries(req.headers).map(([name, value]) => ({ name, value }));
  const q = new URL(req.url).searchParams;
  const entry = {
    startedDateTime: new Date(sent.wallTime * 1000).toISOString(),
    time: 0,
    request: {
      method: req.method,
      url: req.url,
      httpVersion: status?.protocol?.toUpperCase() ?? 'HTTP/1.1',
      headers,
      cookies: [],
      queryString: [...q.entries()].map(([name, value]) => ({ name, value })),
      headersSize: -1,
      bodySize: text === undefined ? 0 : Buffer.byteLength(text),
    },
    response: {
      status: status?.status ?? 0,
      statusText: status?.statusText ?? '',
      httpVersion: status?.protocol?.toUpperCase() ?? 'HTTP/1.1',
      headers: Object.entries(status?.headers ?? {}).map(([name, value]) => ({ name, value })),
      cookies: [],
      content: { size: 0, mimeType: status?.mimeType ?? '' },
      redirectURL: '',
      headersSize: -1,
      bodySize: -1,
    },
    cache: {},
    timings: { send: 0, wait: 0, receive: 0 },
  };
  if (text !== undefined) {
    const mime = req.headers['Content-Type'] ?? req.headers['content-type'] ?? '';
    entry.request.postData = { mimeType: mime, text };
  }
  entries.push(entry);
}
const har = { log: { version: '1.2', creator: { name: 'keisoku-test-cdp', version: '1' }, pages: [], entries } };
writeFileSync(out, JSON.stringify(har, null, 2));
await browser.close();
