// Process plumbing shared by the report/serve browser tests: start a
// long-running keisoku command and wait for a line, stop it with SIGINT, and
// record real runs against the demo target.
import { spawn, spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { keisokuBin, scratch } from './helpers/browser.mjs';

const children = [];

/** True when `keisoku CMD --help` mentions `flag` (the command is built, not a placeholder). */
export function has(cmd, flag) {
  const bin = keisokuBin();
  if (!bin) return false;
  const r = spawnSync(bin, [cmd, '--help'], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.includes(flag);
}

/** Starts a long-running keisoku command; resolves with the child and the first stdout line matching `re`. */
export function startAndMatch(args, re) {
  const child = spawn(keisokuBin(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    const rl = createInterface({ input: child.stdout });
    const timer = setTimeout(() => reject(new Error(`keisoku ${args[0]}: no ${re} within 30 s; stderr: ${stderr}`)), 30000);
    rl.on('line', (line) => {
      const m = line.match(re);
      if (m) {
        clearTimeout(timer);
        resolve({ child, m });
      }
    });
    child.on('exit', (code) => reject(new Error(`keisoku ${args[0]} exited ${code}: ${stderr}`)));
  });
}

/** Stops a child with SIGINT (Ctrl-C); resolves with its exit code. */
export function stop(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.once('exit', (code, sig) => resolve(code ?? sig));
    child.kill('SIGINT');
  });
}

/** Kills whatever a test left running (after a failure). */
export function killAll() {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
}

/** Starts `keisoku demo --serve --tuned`; resolves with { child, url, pid }. */
export async function startDemo() {
  const { child, m } = await startAndMatch(['demo', '--serve', '--tuned'], /demo target: (http:\/\/127\.0\.0\.1:\d+) \(pid (\d+)\)/);
  return { child, url: m[1], pid: m[2] };
}

/**
 * Records a real run against the demo target (`keisoku demo --serve
 * --tuned`): `keisoku run --target URL+path --pid PID ...args` into a fresh
 * store under test-artifacts/NAME/, run name NAME. Resolves with
 * { rec (spawnSync result), store, dir }.
 */
export async function recordDemoRun(name, path, args) {
  const dir = scratch(name);
  const store = join(dir, 'runs.db');
  for (const f of [store, `${store}-wal`, `${store}-shm`]) rmSync(f, { force: true });
  const demo = await startDemo();
  const rec = spawnSync(keisokuBin(), ['run', '--target', `${demo.url}${path}`, '--pid', demo.pid, ...args, '--store', store, '--name', name], { encoding: 'utf8', timeout: 90000 });
  await stop(demo.child);
  return { rec, store, dir };
}
