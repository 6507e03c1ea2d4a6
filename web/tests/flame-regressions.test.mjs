// Unit test of the regression tables' ranking (web/src/flame/regressions.ts)
// in Node: the same order as crates/stacks `rank_rows` (beyond noise first,
// then |change of self share|, then |change of total share|, in pp), also
// for rows written before the share fields existed. Bundled with esbuild.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { build } from 'esbuild';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { WEB } from './helpers/browser.mjs';

const dir = mkdtempSync(join(tmpdir(), 'keisoku-regressions-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const entry = join(dir, 'entry.ts');
writeFileSync(entry, `export { rankRows, fmtPp } from '${join(WEB, 'src/flame/regressions.ts')}';\n`);
await build({ entryPoints: [entry], bundle: true, format: 'esm', platform: 'neutral', outfile: join(dir, 'r.mjs'), logLevel: 'error', loader: { '.css': 'empty' } });
const { rankRows, fmtPp } = await import(pathToFileURL(join(dir, 'r.mjs')).href);

/** A row as an older keisoku wrote it: counts only. */
const row = (frame, bs, as, bt, at, noisy = false) => ({ frame, module: '', before_self: bs, after_self: as, before_total: bt, after_total: at, delta_self_pct: null, delta_total_pct: null, noisy });

test('share change ranks above relative change; noise last; callers after where the change lands', () => {
  // Before 1000 samples, after 1000: libz 63% -> 92% self; handful functions
  // 1 -> 3 samples (+200%) but noisy; a caller whose callee grew (no self).
  const rows = [
    row('tiny_a', 1, 3, 1, 3, true),
    row('tiny_b', 0, 6, 0, 6, true),
    row('caller', 0, 0, 640, 930),
    row('[libz.so]', 630, 920, 630, 920),
    row('work', 300, 60, 300, 60),
  ];
  const { grew, shrank } = rankRows(rows, 1000, 1000);
  assert.deepEqual(grew.map((r) => r.frame), ['[libz.so]', 'caller', 'tiny_b', 'tiny_a']);
  assert.deepEqual(shrank.map((r) => r.frame), ['work']);
  assert.ok(Math.abs(grew[0].key_pp - 29) < 1e-9);
  assert.ok(Math.abs(grew[1].delta_share_pp - 29) < 1e-9, 'caller ranked by its total share');
  // Fields written by crates/stacks win over the sums.
  const withFields = [{ ...row('x', 1, 1, 1, 1), before_share_pct: 10, after_share_pct: 30, delta_share_pp: 20, before_self_share_pct: 0, after_self_share_pct: 0 }];
  assert.equal(rankRows(withFields, 0, 0).grew[0].key_pp, 20);
  assert.equal(fmtPp(29.25), '+29.3 pp');
  assert.equal(fmtPp(-0.05), '−0.050 pp');
});
