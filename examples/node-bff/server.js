'use strict';
// An Express BFF for a news site (field notes §3): GET /news/top renders the top articles.
//
// CAUSES (comma-separated, MODE=naive only) plants one cause at a time or several:
//   json         the article cache stores JSON text and JSON.parse runs on every hit
//   intl         `new Intl.DateTimeFormat()` for every date shown
//   di           the container builds a new ArticleRenderer per request; its constructor
//                reads the template and the site config with readFileSync (loadConfig)
//   single       one process (no cluster) on a multi-core host
//   nokeepalive  a new TCP connection to the recommendation backend for every request
//   unbounded    the page lists every reader comment ever posted (no limit): each request
//                posts one, so the response grows with the traffic served
// MODE=tuned: cluster with one worker per core, objects cached, one formatter, singletons,
// a keep-alive agent to the backend.
const cluster = require('node:cluster');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const MODE = process.env.MODE || 'naive';
const CAUSES = new Set(MODE === 'tuned' ? [] : (process.env.CAUSES || '').split(',').map((s) => s.trim()).filter(Boolean));
const KNOWN = ['json', 'intl', 'di', 'single', 'nokeepalive', 'unbounded'];
for (const c of CAUSES) {
  if (!KNOWN.includes(c)) {
    console.error(`node-bff: unknown cause ${c} (known: ${KNOWN.join(', ')})`);
    process.exit(2);
  }
}
const PORT = Number(process.argv[2]);
const BACKEND_PORT = Number(process.env.BACKEND_PORT || 0);
const HERE = __dirname;

if (cluster.isPrimary && !CAUSES.has('single')) {
  const n = Number(process.env.WORKERS || os.cpus().length);
  let listening = 0;
  for (let i = 0; i < n; i++) cluster.fork();
  cluster.on('listening', () => {
    listening += 1;
    if (listening === n) console.log(`node-bff listening on ${PORT}`);
  });
  process.on('SIGTERM', () => {
    for (const w of Object.values(cluster.workers)) w.kill('SIGTERM');
    process.exit(0);
  });
} else {
  serve();
}

function serve() {
  const express = require('express');
  const app = express();
  const accessLog = fs.createWriteStream(process.env.ACCESS_LOG || '/dev/null', { flags: 'a' });

  // --- the article cache -------------------------------------------------
  // 900 articles (~520 kB of JSON text): JSON.parse of the cached text costs about what each
  // other planted cause does, so it is not crowded out when they are stacked (at 400 it held
  // 7% of the samples beside the formatter's 26%, under json-parse's 12%).
  const articles = [];
  for (let i = 0; i < 900; i++) {
    articles.push({
      id: 10000 + i,
      title: `Article ${i}: ${'municipal budget transit weather election '.repeat(2 + (i % 3))}`,
      section: ['politics', 'economy', 'sports', 'culture', 'tech'][i % 5],
      published: Date.UTC(2026, 10, 1 + (i % 23), i % 24, (i * 7) % 60),
      tags: Array.from({ length: 6 }, (_, k) => `tag-${(i * 13 + k) % 97}`),
      lead: 'Lorem ipsum '.repeat(20 + (i % 10)),
    });
  }
  const cacheText = new Map([['top', JSON.stringify(articles)]]);
  const cacheObjects = new Map([['top', articles]]);
  function cachedArticles(key) {
    if (CAUSES.has('json')) return JSON.parse(cacheText.get(key));
    return cacheObjects.get(key);
  }

  // --- dates -----------------------------------------------------------------
  const dateOptions = {
    year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', timeZone: 'Asia/Tokyo',
  };
  const sharedFormat = new Intl.DateTimeFormat('ja-JP', dateOptions);
  function formatPublished(ms) {
    if (CAUSES.has('intl')) return new Intl.DateTimeFormat('ja-JP', dateOptions).format(ms);
    return sharedFormat.format(ms);
  }

  // --- a small DI container --------------------------------------------------
  function loadConfig() {
    return JSON.parse(fs.readFileSync(path.join(HERE, 'site-config.json'), 'utf8'));
  }
  class ArticleRenderer {
    constructor() {
      this.template = fs.readFileSync(path.join(HERE, 'article.tmpl'), 'utf8');
      this.config = loadConfig();
    }
    render(a) {
      return this.template
        .replace('{{title}}', a.title)
        .replace('{{section}}', this.config.sections[a.section] || a.section)
        .replace('{{date}}', formatPublished(a.published))
        .replace('{{lead}}', a.lead.slice(0, this.config.leadLength));
    }
  }
  class Container {
    constructor() {
      this.factories = new Map();
      this.singletons = new Map();
    }
    register(name, factory) {
      this.factories.set(name, factory);
    }
    resolve(name) {
      if (CAUSES.has('di')) return this.factories.get(name)();
      if (!this.singletons.has(name)) this.singletons.set(name, this.factories.get(name)());
      return this.singletons.get(name);
    }
  }
  const container = new Container();
  container.register('ArticleRenderer', () => new ArticleRenderer());

  // --- the recommendation backend ------------------------------------------
  const keepAliveAgent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  function recommendations() {
    return new Promise((resolve, reject) => {
      const agent = CAUSES.has('nokeepalive') ? new http.Agent({ keepAlive: false }) : keepAliveAgent;
      const req = http.get({ host: '127.0.0.1', port: BACKEND_PORT, path: '/recommend', agent }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d) => { body += d; });
        res.on('end', () => {
          try { resolve(JSON.parse(body)); } catch (e) { reject(e); }
        });
      });
      req.on('error', reject);
    });
  }

  // --- reader comments -------------------------------------------------------
  // Readers post COMMENT_RATE comments a second from the first request on (a timer, not one per
  // request: at a request's cost the list would grow with the throughput and crowd every other
  // stacked cause out of the samples); the page shows the latest few, or with the cause
  // unbounded all of them: the query has no limit.
  const comments = [];
  let commentSeq = 0;
  const commentRate = Number(process.env.COMMENT_RATE || 30);
  let commenting = null;
  function startCommenting() {
    if (commenting || !(commentRate > 0)) return;
    commenting = setInterval(() => {
      for (let i = 0; i < Math.max(1, Math.round(commentRate / 10)); i++) postComment();
    }, 100);
    commenting.unref();
  }
  function postComment() {
    commentSeq += 1;
    comments.push({
      id: commentSeq,
      article: 10000 + (commentSeq % 400),
      text: `comment ${commentSeq}: ${'agreed, the council should publish the transit budget in full. '.repeat(2)}`,
    });
  }
  function latestComments() {
    if (CAUSES.has('unbounded')) return comments;
    return comments.slice(-10);
  }

  app.get('/news/top', async (req, res) => {
    const start = process.hrtime.bigint();
    try {
      const recommended = BACKEND_PORT ? await recommendations() : { ids: [] };
      const list = cachedArticles('top');
      // One renderer per request (a request-scoped service): with the cause di the container
      // builds it, reading its files, for every request.
      const renderer = container.resolve('ArticleRenderer');
      const parts = [];
      for (let i = 0; i < 30; i++) parts.push(renderer.render(list[i]));
      startCommenting();
      const shown = latestComments().map((c) => `<li data-article="${c.article}">${c.text}</li>`).join('');
      const body = `<html><body><ol>${parts.join('')}</ol><ul>${shown}</ul><p>${recommended.ids.length} recommended</p></body></html>`;
      res.type('html').send(body);
      const secs = Number(process.hrtime.bigint() - start) / 1e9;
      accessLog.write(`time:${new Date().toISOString()}\tmethod:GET\turi:/news/top\tstatus:200\tsize:${Buffer.byteLength(body)}\treqtime:${secs.toFixed(6)}\n`);
    } catch (e) {
      res.status(502).send(String(e));
    }
  });

  app.listen(PORT, '127.0.0.1', () => {
    if (cluster.isPrimary) console.log(`node-bff listening on ${PORT}`);
  });
}
