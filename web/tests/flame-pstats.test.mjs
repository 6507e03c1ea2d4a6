// The call-graph table of a cProfile input on the flame page, from a real
// profile recorded at test time by Python's cProfile: its rows are pstats'
// own numbers (checked against `pstats.Stats` on the same file), the page
// says the flame graph is estimated from a call graph, and a row shows the
// function's callers and callees.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { launch, open, shot, binSupports, runBin, scratch, write } from './helpers/browser.mjs';

const PROGRAM = `
import cProfile, sys, threading
def send_log(n):
    threading.Event().wait(0.005)
def price(items):
    return sum(i * 1.08 for i in items)
def order(n):
    t = price(range(n * 500))
    send_log(n)
    return t
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def main():
    for n in range(10):
        order(n)
    fib(15)
p = cProfile.Profile(); p.enable(); main(); p.disable(); p.dump_stats(sys.argv[1])
`;

const PSTATS = `
import json, pstats, sys
s = pstats.Stats(sys.argv[1])
rows = sorted(s.stats.items(), key=lambda kv: -kv[1][2])
print(json.dumps([[pstats.func_std_string(k), v[0], v[1], "%.3f" % v[2], "%.3f" % v[3]] for k, v in rows[:10]]))
`;

let browser;
before(async () => {
  if (binSupports('flame')) browser = await launch();
});
after(async () => {
  await browser?.close();
});

function python(args) {
  const r = spawnSync('python3', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python3 ${args[0]}: ${r.stderr}`);
  return r.stdout;
}

test('a cProfile file: the page shows pstats numbers and labels its flame graph estimated', async (t) => {
  if (!binSupports('flame')) return t.skip('KEISOKU_BIN does not implement `keisoku flame`');
  const dir = scratch('flame-pstats');
  const prof = join(dir, 'shop.prof');
  python([write(join(dir, 'shop.py'), PROGRAM), prof]);
  const expected = JSON.parse(python(['-c', PSTATS, prof]));
  const html = join(dir, 'shop.html');
  runBin(['flame', prof, '-o', html]);
  const { page, errors, ctx } = await open(browser, html);
  await page.waitForSelector('.ks-callgraph-table tbody tr');
  assert.match(await page.textContent('h1'), /estimated from a call graph/);
  assert.match(await page.textContent('.ks-callgraph-note'), /estimated from a call graph/);
  const rows = await page.$$eval('.ks-callgraph-table tbody tr', (trs) =>
    trs.slice(0, 10).map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)),
  );
  // pstats' rows by tottime: label, ncalls, tottime and cumtime agree (ties
  // at the third decimal may order differently, so compare as sets by label).
  const byLabel = new Map(rows.map((r) => [r[5], r]));
  for (const [label, cc, nc, tt, ct] of expected.slice(0, 4)) {
    const r = byLabel.get(label);
    assert.ok(r, `${label} in the page's top rows`);
    assert.equal(r[0], nc === cc ? String(nc) : `${nc}/${cc}`, `${label} ncalls`);
    assert.equal(r[1], tt, `${label} tottime`);
    assert.equal(r[3], ct, `${label} cumtime`);
  }
  // Recursion shows as pstats shows it.
  const fib = rows.find((r) => r[5].endsWith('(fib)'));
  if (fib) assert.match(fib[0], /^\d+\/1$/);
  // A row: its callers and callees, and the graph searches for it.
  await page.click('.ks-callgraph-table tbody tr:has(td:text-matches("\\\\(order\\\\)$"))');
  const side = await page.textContent('.ks-callgraph .ks-functable-side');
  assert.match(side, /called by/);
  assert.match(side, /\(main\)/);
  assert.match(side, /\(send_log\)/);
  await shot(page, 'flame-pstats');
  assert.deepEqual(errors, []);
  await ctx.close();
});
