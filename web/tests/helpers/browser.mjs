// Shared browser-test plumbing: build the bundle, write pages (through the
// real `keisoku` binary when it supports the command, else through the same
// HTML template crates/report uses), open them in headless Chromium and
// collect console errors.
import { spawnSync, execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync, existsSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { decodeCompactPage } from './compact.mjs';

const here = dirname(fileURLToPath(import.meta.url));
export const WEB = resolve(here, '../..');
export const ROOT = resolve(WEB, '..');
export const ARTIFACTS = join(ROOT, 'test-artifacts');
mkdirSync(ARTIFACTS, { recursive: true });

let bundle = null;
/** Bundles web/ once per test process into a temp dir. */
export function bundleDir() {
  if (bundle) return bundle;
  bundle = mkdtempSync(join(tmpdir(), 'keisoku-web-'));
  const made = bundle;
  process.on('exit', () => rmSync(made, { recursive: true, force: true }));
  execFileSync(process.execPath, [join(WEB, 'build.mjs'), '--outdir', bundle], { cwd: WEB, stdio: 'ignore' });
  return bundle;
}

const esc = (s) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const escScript = (s) => s.replaceAll('</', '<\\/').replaceAll('<!--', '<\\!--');

/**
 * keisoku's idle-frame list as the pages carry it, read from its one
 * definition (crates/common/src/idle.rs) so the template cannot drift.
 */
function idleFramesAttr() {
  const src = readFileSync(join(ROOT, 'crates/common/src/idle.rs'), 'utf8');
  const list = src.slice(src.indexOf('pub const IDLE_FRAMES'), src.indexOf('];'));
  return [...list.matchAll(/"([^"]+)"/g)].map((m) => m[1]).join(' ');
}

/** The same page template as crates/report/src/assets.rs `page`. */
export function templatePage(title, entry, dataJson) {
  const dir = bundleDir();
  const js = readFileSync(join(dir, `${entry}.js`), 'utf8');
  const cssPath = join(dir, `${entry}.css`);
  const css = existsSync(cssPath) ? readFileSync(cssPath, 'utf8') : '';
  return `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark"><meta name="keisoku-idle-frames" content="${esc(idleFramesAttr())}"><title>${esc(title)}</title><style>${css.replaceAll('</style', '<\\/style')}</style></head>\n<body><div id="app"></div>\n<script type="application/json" id="keisoku-data">${escScript(dataJson)}</script>\n<script>${escScript(js)}</script>\n</body></html>\n`;
}

/** Path of the keisoku binary from KEISOKU_BIN, if it exists. */
export function keisokuBin() {
  const b = process.env.KEISOKU_BIN;
  return b && existsSync(b) ? b : null;
}

const supported = new Map();
/** True when the binary implements `cmd` (its --help works and the command is not a placeholder). */
export function binSupports(cmd) {
  if (supported.has(cmd)) return supported.get(cmd);
  const bin = keisokuBin();
  let ok = false;
  if (bin) {
    const r = spawnSync(bin, [cmd, '--help'], { encoding: 'utf8' });
    ok = r.status === 0 && /-o|--output/.test(r.stdout);
  }
  supported.set(cmd, ok);
  return ok;
}

/** Runs the binary; throws with its stderr on failure. */
export function runBin(args) {
  const r = spawnSync(keisokuBin(), args, { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`keisoku ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return r;
}

/** A scratch directory for a test's inputs and outputs. */
export function scratch(name) {
  const d = join(ARTIFACTS, name);
  mkdirSync(d, { recursive: true });
  return d;
}

/** The JSON embedded in a generated page. */
export function embeddedData(htmlPath) {
  const html = readFileSync(htmlPath, 'utf8');
  const start = html.indexOf('id="keisoku-data">');
  if (start < 0) throw new Error(`${htmlPath}: no embedded data`);
  const from = start + 'id="keisoku-data">'.length;
  const end = html.indexOf('</script>', from);
  return JSON.parse(html.slice(from, end));
}

/**
 * The profile inside a page's data (bare or wrapped as { profile }), as
 * profile JSON v1 also when the page embeds the compact form.
 */
export function embeddedProfile(htmlPath) {
  const d = embeddedData(htmlPath);
  const p = d.profile && typeof d.profile === 'object' ? d.profile : d;
  return p.encoding === 'compact-1' ? decodeCompactPage(p, readFileSync(htmlPath, 'utf8')) : p;
}

export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

/** Launches headless Chromium. */
export async function launch() {
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: CHROMIUM_ARGS });
}

/** Opens an HTML file; `errors` collects console errors and page errors. */
export async function open(browser, htmlPath, { width = 1366, height = 900, colorScheme = 'light' } = {}) {
  const ctx = await browser.newContext({ viewport: { width, height }, colorScheme });
  const page = await ctx.newPage();
  const errors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(pathToFileURL(htmlPath).href);
  await page.waitForFunction(() => window.keisoku !== undefined || document.querySelector('.ks-fatal'));
  return { page, errors, ctx };
}

/** Saves a screenshot under test-artifacts/. */
export async function shot(page, name) {
  const p = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: p, fullPage: true });
  return p;
}

/** Writes a file and returns its path. */
export function write(path, text) {
  writeFileSync(path, text);
  return path;
}
