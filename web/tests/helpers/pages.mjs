// Page generation for the browser tests: through the real binary
// (`keisoku flame|diff|scope`) when KEISOKU_BIN implements the command,
// otherwise through the same template with JSON built here. Each returns
// the HTML path and how it was made, so tests can say which path ran.
import { join } from 'node:path';
import { binSupports, runBin, scratch, templatePage, write } from './browser.mjs';
import { toFolded, toCpuprofile } from './profiles.mjs';

/** A flame graph page of `profile` (via folded stacks when using the binary). */
export function flamePage(name, profile, extraArgs = []) {
  const dir = scratch(name);
  const html = join(dir, `${name}.html`);
  if (binSupports('flame')) {
    const input = write(join(dir, `${name}.folded`), toFolded(profile));
    runBin(['flame', input, '-o', html, ...extraArgs]);
    return { html, via: 'binary' };
  }
  write(html, templatePage(profile.title, 'flame', JSON.stringify({ title: profile.title, view: {}, profile })));
  return { html, via: 'template' };
}

/** A flame graph page made from the profile JSON directly (component tests needing threads/times). */
export function flamePageFromJson(name, profile, view = {}) {
  const dir = scratch(name);
  const html = join(dir, `${name}.html`);
  write(html, templatePage(profile.title, 'flame', JSON.stringify({ title: profile.title, view, profile })));
  return { html, via: 'template' };
}

/** A heat map page of `profile` (via a .cpuprofile when using the binary). */
export function scopePage(name, profile, rows = 50) {
  const dir = scratch(name);
  const html = join(dir, `${name}.html`);
  if (binSupports('scope')) {
    const input = write(join(dir, `${name}.cpuprofile`), JSON.stringify(toCpuprofile(profile)));
    runBin(['scope', input, '-o', html, '--rows', String(rows)]);
    return { html, via: 'binary' };
  }
  write(html, templatePage(profile.title, 'scope', JSON.stringify({ title: profile.title, view: { rows, idle: false }, profile })));
  return { html, via: 'template' };
}

/** Counts form of a profile: self weight per node, no samples. */
export function countsForm(p) {
  const counts = new Array(p.nodes.parent.length).fill(0);
  p.samples.node.forEach((n, i) => (counts[n] += p.samples.weight ? p.samples.weight[i] : 1));
  return { ...p, samples: null, counts, threads: [], duration_ms: null };
}

/** A differential page before -> after. */
export function diffPage(name, before, after, { normalize = false } = {}) {
  const dir = scratch(name);
  const html = join(dir, `${name}.html`);
  if (binSupports('diff')) {
    const a = write(join(dir, 'before.folded'), toFolded(before));
    const b = write(join(dir, 'after.folded'), toFolded(after));
    runBin(['diff', a, b, '-o', html, ...(normalize ? ['--normalize'] : [])]);
    return { html, via: 'binary' };
  }
  const data = { version: 1, mode: normalize ? 'normalized' : 'absolute', before: countsForm(before), after: countsForm(after), table: diffTable(before, after) };
  write(html, templatePage(`${before.title} vs ${after.title}`, 'diff', JSON.stringify({ title: 'diff', diff: data })));
  return { html, via: 'template' };
}

/** Per-function self/total of a profile (total counts recursion once). */
function funcTotals(p) {
  const m = new Map();
  const get = (n) => m.get(n) ?? (m.set(n, { self: 0, total: 0 }), m.get(n));
  p.samples.node.forEach((node) => {
    const names = [];
    for (let n = node; n >= 0; n = p.nodes.parent[n]) names.push(p.frames.name[p.nodes.frame[n]]);
    get(names[0]).self++;
    for (const f of new Set(names)) get(f).total++;
  });
  return m;
}

/** The regression table rows for the template path (the binary computes its own). */
export function diffTable(before, after) {
  const b = funcTotals(before);
  const a = funcTotals(after);
  const pct = (x, y) => (x > 0 ? ((y - x) / x) * 100 : y > 0 ? Infinity : 0);
  const rows = [];
  for (const f of new Set([...b.keys(), ...a.keys()])) {
    const x = b.get(f) ?? { self: 0, total: 0 };
    const y = a.get(f) ?? { self: 0, total: 0 };
    if (x.total === y.total && x.self === y.self) continue;
    rows.push({ frame: f, module: '', before_self: x.self, after_self: y.self, before_total: x.total, after_total: y.total, delta_self_pct: pct(x.self, y.self), delta_total_pct: pct(x.total, y.total), noisy: x.total + y.total < 20 });
  }
  return rows.map((r) => ({ ...r, delta_self_pct: Number.isFinite(r.delta_self_pct) ? r.delta_self_pct : 1e9, delta_total_pct: Number.isFinite(r.delta_total_pct) ? r.delta_total_pct : 1e9 }));
}
