// Bundles every page entry (src/pages/<name>.ts) into <outdir>/<name>.js and
// <name>.css, minified, as one IIFE each, so the Rust side can inline them
// into self-contained HTML files. Usage: node build.mjs [--outdir DIR]
import * as esbuild from 'esbuild';
import { readdirSync, mkdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const argOut = process.argv.indexOf('--outdir');
const outdir = argOut > 0 ? process.argv[argOut + 1] : join(here, 'dist');
mkdirSync(outdir, { recursive: true });

const pages = readdirSync(join(here, 'src/pages')).filter((f) => f.endsWith('.ts'));
await esbuild.build({
  entryPoints: pages.map((p) => join(here, 'src/pages', p)),
  outdir,
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020'],
  legalComments: 'none',
  logLevel: 'warning',
});
console.log(`bundled ${pages.length} page(s) into ${outdir}`);
