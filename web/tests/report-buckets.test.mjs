// The TypeScript port of crates/common's latency buckets agrees with the
// contract's definition (k = floor(8*log2(us)), upper edge 2^((k+1)/8)) and
// the percentile rule (nearest rank, upper edge of the bucket).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { execFileSync } from 'node:child_process';
import { WEB } from './helpers/browser.mjs';

// Bundle the module for node (esbuild comes with web/'s dev dependencies).
const dir = mkdtempSync(join(tmpdir(), 'keisoku-buckets-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const out = join(dir, 'buckets.mjs');
execFileSync(join(WEB, 'node_modules/.bin/esbuild'), [join(WEB, 'src/report/buckets.ts'), '--bundle', '--format=esm', `--outfile=${out}`], { stdio: 'ignore' });
const b = await import(out);

test('bucket edges follow the contract', () => {
  assert.equal(b.latencyBucket(0.2), 0, 'below 1 µs is bucket 0');
  assert.equal(b.latencyBucket(1), 0);
  assert.equal(b.latencyBucket(2), 8, 'a power of two starts its bucket');
  assert.equal(b.latencyBucket(1024), 80);
  assert.equal(b.latencyBucket(1023.9), 79);
  for (const us of [1.5, 3, 17, 999, 12345.6, 2.5e6]) {
    const k = b.latencyBucket(us);
    assert.equal(k, Math.floor(8 * Math.log2(us)), `${us}`);
    assert.ok(b.bucketLowerUs(k) <= us && us < b.bucketUpperUs(k), `${us} in bucket ${k}`);
  }
  assert.equal(b.bucketUpperUs(79), 1024);
});

test('percentiles read the upper edge of the nearest-rank bucket', () => {
  const h = new Map();
  b.addHist(h, [[80, 98], [120, 2], ['x', 3], [5, -1]]);
  assert.equal(b.histCount(h), 100, 'malformed pairs are skipped');
  assert.equal(b.histPercentileMs(h, 50), b.bucketUpperUs(80) / 1000);
  assert.equal(b.histPercentileMs(h, 98), b.bucketUpperUs(80) / 1000);
  assert.equal(b.histPercentileMs(h, 99), b.bucketUpperUs(120) / 1000);
  assert.equal(b.histPercentileMs(new Map(), 99), null);
});

test('a range takes the seconds whose middle lies inside it', () => {
  const rs = { method: 'GET', route: '/x', t_ms: [1000, 2000, 3000], count: [5, 7, 9], errors: [0, 1, 2], max_ms: [3, 8, 4], hist: [[[80, 5]], [[81, 7]], [[82, 9]]] };
  const r = b.routeInRange(rs, { fromMs: 1000, toMs: 3000 });
  assert.equal(r.count, 16);
  assert.equal(r.errors, 3);
  assert.equal(r.maxMs, 8);
  assert.equal(b.histCount(r.hist), 16);
  assert.equal(b.routeInRange(rs, null).count, 21);
});
