// `keisoku compare` (and serve's /compare): run B against baseline A:
// regression gate with the profile's top mover, findings that went away or
// appeared, headline deltas, both runs' timelines on one relative time
// axis, both sweeps on the same axes, per-route deltas and the
// differential flame graph, opened at its root.
import '../common/base.css';
import '../report/report.css';
import { h, pageData, showFatal } from '../common/dom';
import { fmtSignedPct } from '../common/format';
import { installKeys } from '../common/keyboard';
import { sweepChart, type SweepCurve } from '../charts/sweep';
import { fmtValue } from '../charts/units';
import { FlameGraph } from '../flame/flamegraph';
import { regexEscape } from '../flame/functable';
import { Profile, type DiffJson } from '../flame/profile';
import { fmtPp, regressionTables } from '../flame/regressions';

interface SweepPoint { label: string; connections: number | null; rate: number | null; rps: number | null; p50: number | null; p80: number | null; p99: number | null }
interface Summary { id: string; name: string; target: string; started_unix_ms: number; duration_ms: number; interrupted: boolean; metrics: Record<string, number>; sweep: SweepPoint[] }
interface Delta { metric: string; unit: string; a: number; b: number; abs: number; pct: number | null; better: boolean | null }
interface RouteDelta { method: string; uri: string; count_a: number | null; count_b: number | null; avg_a: number | null; avg_b: number | null; p99_a: number | null; p99_b: number | null; p99_pct: number | null }
interface ClauseVerdict { clause: { text: string; relative: boolean }; change: number | null; pass: boolean }
interface FindingRef { id: string; rule: string; title: string; severity: string; score: number }
interface FindingDelta { id: string; change: 'new' | 'resolved' | 'unchanged'; a: FindingRef | null; b: FindingRef | null }
interface RelTimeline { source: string; t_s: number[]; rps: (number | null)[]; p99_ms: (number | null)[]; errors: (number | null)[] }
interface TopMover { frame: string; module: string; before_self_share_pct: number; after_self_share_pct: number; before_share_pct: number; after_share_pct: number }
interface Comparison {
  a: Summary; b: Summary; deltas: Delta[]; routes: RouteDelta[]; gate: { pass: boolean; clauses: ClauseVerdict[] } | null; diff: DiffJson | null;
  // Absent in pages written by an older keisoku.
  findings?: FindingDelta[]; timelines?: { a: RelTimeline; b: RelTimeline }; top_mover?: TopMover | null; names_normalised?: boolean;
}

const app = document.getElementById('app') as HTMLElement;

function pct(p: number | null): string {
  return p === null ? 'new' : fmtSignedPct(p);
}

function runLink(s: Summary, served: boolean): HTMLElement {
  return served ? h('a', { href: `/runs/${encodeURIComponent(s.id)}`, text: s.name }) : h('span', { text: s.name });
}

try {
  const { served, comparison: c } = pageData<{ served: boolean; comparison: Comparison }>();
  let graph: FlameGraph | null = null;
  const nav = h('nav', {});
  if (served) nav.append(h('a', { href: '/', text: '← all runs' }));
  app.append(
    h('header', { class: 'ks-page-head' }, h('h1', {}, 'keisoku compare: ', runLink(c.a, served), ' → ', runLink(c.b, served)), h('span', { class: 'ks-muted', text: `A = ${c.a.id} (baseline) · B = ${c.b.id}` }), nav),
  );

  // The gate verdict first: it is what CI acted on.
  const gateSec = h('section', { id: 'gate', class: 'ks-section' }, h('h2', { text: 'Regression gate' }));
  if (c.gate) {
    gateSec.append(h('div', { class: `ks-verdict-banner ${c.gate.pass ? 'ks-pass' : 'ks-fail'}` }, h('strong', { text: c.gate.pass ? 'PASS: no regression past the limits' : 'FAIL: B regressed' })));
    gateSec.append(
      h('table', { class: 'ks-table ks-slo' },
        h('thead', {}, h('tr', {}, h('th', { class: 'ks-name', text: '' }), h('th', { class: 'ks-name', text: 'fails when' }), h('th', { text: 'observed change' }))),
        h('tbody', {}, ...c.gate.clauses.map((v) => h('tr', {},
          h('td', { class: 'ks-name' }, h('span', { class: `ks-badge ${v.pass ? 'ks-badge-pass' : 'ks-badge-fail'}`, text: v.pass ? 'PASS' : 'FAIL' })),
          h('td', { class: 'ks-name', text: v.clause.text }),
          h('td', { text: v.change === null ? 'from zero' : v.clause.relative ? fmtSignedPct(v.change) : `${v.change >= 0 ? '+' : ''}${+v.change.toFixed(3)}` })))),
      ),
    );
  } else {
    gateSec.append(h('p', { class: 'ks-muted', text: 'No gate given (keisoku compare A B --fail-on-regression \'p99>+10%,rps<-5%\').' }));
  }
  // What moved in the profile, next to what the gate judged: the function
  // where the largest change of share landed.
  const tm = c.top_mover;
  if (tm) {
    const d = tm.after_self_share_pct - tm.before_self_share_pct;
    const mover = h('p', { class: 'ks-top-mover' },
      h('strong', { text: 'Top mover in the profile: ' }),
      h('a', { href: '#profile', class: 'ks-top-mover-frame', text: tm.frame }),
      ` ${fmtPp(d)} of samples in the function itself (${tm.before_self_share_pct.toFixed(1)}% → ${tm.after_self_share_pct.toFixed(1)}%), ${tm.before_share_pct.toFixed(1)}% → ${tm.after_share_pct.toFixed(1)}% with its callees.`);
    mover.querySelector('a')?.addEventListener('click', () => graph?.search(`^${regexEscape(tm.frame)}$`));
    gateSec.append(mover);
  } else if (c.diff) gateSec.append(h('p', { class: 'ks-muted ks-top-mover', text: 'Top mover in the profile: no function moved beyond sampling noise.' }));
  app.append(gateSec);

  // Findings of both runs: what went away, what appeared, what stayed.
  const findSec = h('section', { id: 'findings', class: 'ks-section' }, h('h2', { text: 'Findings' }));
  const fds = c.findings ?? [];
  if (fds.length) {
    const count = (k: string): number => fds.filter((d) => d.change === k).length;
    findSec.append(h('p', { class: 'ks-muted', text: `${count('new')} new in B · ${count('resolved')} resolved (in A only) · ${count('unchanged')} in both` }));
    findSec.append(h('table', { class: 'ks-table ks-finding-changes' },
      h('thead', {}, h('tr', {}, h('th', { class: 'ks-name', text: '' }), h('th', { class: 'ks-name', text: 'severity' }), h('th', { class: 'ks-name', text: 'finding' }), h('th', { text: 'score A' }), h('th', { text: 'score B' }))),
      h('tbody', {}, ...fds.map((d) => {
        const f = (d.b ?? d.a) as FindingRef;
        return h('tr', { 'data-change': d.change, 'data-id': d.id },
          h('td', { class: 'ks-name' }, h('span', { class: `ks-badge ks-change-${d.change} ${d.change === 'new' ? 'ks-badge-fail' : d.change === 'resolved' ? 'ks-badge-pass' : ''}`, text: d.change })),
          h('td', { class: `ks-name ks-sev-${f.severity}`, text: f.severity }),
          h('td', { class: 'ks-name', title: d.id }, f.title, h('span', { class: 'ks-muted', text: ` ${d.id}` })),
          h('td', { text: d.a ? d.a.score.toFixed(0) : '—' }),
          h('td', { text: d.b ? d.b.score.toFixed(0) : '—' }));
      }))));
  } else findSec.append(h('p', { class: 'ks-muted ks-empty', text: 'Neither run has findings.' }));
  app.append(findSec);

  const head = h('section', { id: 'headline', class: 'ks-section' }, h('h2', { text: 'Headline' }));
  if (c.deltas.length) {
    head.append(h('table', { class: 'ks-table ks-deltas', style: 'width:auto' },
      h('thead', {}, h('tr', {}, h('th', { class: 'ks-name', text: 'metric' }), h('th', { text: `A: ${c.a.name}` }), h('th', { text: `B: ${c.b.name}` }), h('th', { text: 'change' }), h('th', { text: '%' }))),
      h('tbody', {}, ...c.deltas.map((d) => {
        const cls = d.better === null ? '' : d.better ? 'ks-delta-better' : 'ks-delta-worse';
        const unit = d.unit === 'requests' || d.unit === 'errors' ? '' : d.unit;
        return h('tr', { 'data-metric': d.metric },
          h('td', { class: 'ks-name', text: d.metric }),
          h('td', { text: fmtValue(d.a, unit, true) }),
          h('td', { text: fmtValue(d.b, unit, true) }),
          h('td', { class: cls, text: `${d.abs >= 0 ? '+' : ''}${fmtValue(d.abs, unit, true)}` }),
          h('td', { class: cls, text: pct(d.pct) }));
      }))));
  } else head.append(h('p', { class: 'ks-muted ks-empty', text: 'Neither run has load results to compare.' }));
  app.append(head);

  // Both runs' timelines on seconds since each load started: seconds are
  // whole on both sides (crates/report aligns them), so lines are drawn.
  const tlSec = h('section', { id: 'timelines', class: 'ks-section' }, h('h2', { text: 'Timelines (seconds since each run\'s load started)' }));
  const ta = c.timelines?.a;
  const tb = c.timelines?.b;
  if (ta && tb && ta.t_s.length + tb.t_s.length >= 2) {
    const grid = h('div', { class: 'ks-sweeps ks-compare-timelines' });
    tlSec.append(grid);
    const width = Math.max(320, Math.floor((app.clientWidth - 36) / 3));
    const xLabel = 's since load start';
    const line = (label: string, t: RelTimeline, key: 'rps' | 'p99_ms' | 'errors', color: number): SweepCurve => ({ label, x: t.t_s, y: t[key], color, dash: false });
    for (const [title, key, unit] of [['Throughput', 'rps', 'req/s'], ['p99 latency', 'p99_ms', 'ms'], ['Errors (transport + 5xx)', 'errors', '/s']] as const) {
      sweepChart(grid, { title, xLabel, unit, width, integerX: true, curves: [line(`A ${c.a.name}`, ta, key, 0), line(`B ${c.b.name}`, tb, key, 1)] });
    }
  } else tlSec.append(h('p', { class: 'ks-muted ks-empty', text: 'No per-second client or access-log series to compare.' }));
  app.append(tlSec);

  const sweepSec = h('section', { id: 'sweep', class: 'ks-section' }, h('h2', { text: 'Sweeps' }));
  const usable = (s: Summary): SweepPoint[] => s.sweep.filter((p) => typeof (p.rate ?? p.connections) === 'number');
  const pa = usable(c.a);
  const pb = usable(c.b);
  if (pa.length + pb.length >= 2) {
    const byRate = [...pa, ...pb].some((p) => typeof p.rate === 'number');
    const xOf = (p: SweepPoint): number => (byRate ? p.rate : p.connections) ?? 0;
    const width = Math.max(360, Math.floor((app.clientWidth - 24) / 2));
    const grid = h('div', { class: 'ks-sweeps' });
    sweepSec.append(grid);
    const xLabel = byRate ? 'offered rate (req/s)' : 'connections';
    const curve = (label: string, ps: SweepPoint[], key: 'rps' | 'p50' | 'p99', color: number, dash: boolean): SweepCurve => ({ label, x: ps.map(xOf), y: ps.map((p) => p[key]), color, dash });
    sweepChart(grid, { title: 'Throughput', xLabel, unit: 'req/s', width, integerX: !byRate, curves: [curve(`A ${c.a.name}`, pa, 'rps', 0, false), curve(`B ${c.b.name}`, pb, 'rps', 1, false)] });
    sweepChart(grid, {
      title: 'Latency', xLabel, unit: 'ms', width, integerX: !byRate,
      curves: [curve(`A p99`, pa, 'p99', 0, false), curve(`B p99`, pb, 'p99', 1, false), curve(`A p50`, pa, 'p50', 0, true), curve(`B p50`, pb, 'p50', 1, true)],
    });
  } else sweepSec.append(h('p', { class: 'ks-muted ks-empty', text: 'No sweeps to compare.' }));
  app.append(sweepSec);

  const routeSec = h('section', { id: 'routes', class: 'ks-section' }, h('h2', { text: 'Routes' }));
  if (c.routes.length) {
    const cell = (v: number | null, unit: string): HTMLElement => h('td', { text: v === null ? '—' : unit ? fmtValue(v, unit) : v.toLocaleString('en-US') });
    routeSec.append(h('div', { class: 'ks-routes-wrap' }, h('table', { class: 'ks-table ks-routes' },
      h('thead', {}, h('tr', {}, ...['method', 'uri'].map((t) => h('th', { class: 'ks-name', text: t })), ...['count A', 'count B', 'avg A', 'avg B', 'p99 A', 'p99 B', 'p99 change'].map((t) => h('th', { text: t })))),
      h('tbody', {}, ...c.routes.map((r) => h('tr', {},
        h('td', { class: 'ks-name', text: r.method }),
        h('td', { class: 'ks-name', text: r.uri }),
        cell(r.count_a, ''), cell(r.count_b, ''), cell(r.avg_a, 'ms'), cell(r.avg_b, 'ms'), cell(r.p99_a, 'ms'), cell(r.p99_b, 'ms'),
        h('td', { class: r.p99_pct === null ? '' : r.p99_pct > 5 ? 'ks-delta-worse' : r.p99_pct < -5 ? 'ks-delta-better' : '', text: r.count_a === null ? 'new route' : r.count_b === null ? 'gone' : pct(r.p99_pct) })))))));
  } else routeSec.append(h('p', { class: 'ks-muted ks-empty', text: 'No per-route data in either run.' }));
  app.append(routeSec);

  const flameSec = h('section', { id: 'profile', class: 'ks-section' }, h('h2', { text: 'Differential flame graph' }));
  // On the page before the graph is built, so it opens laid out, at its root.
  app.append(flameSec);
  if (c.diff) {
    const before = Profile.from(c.diff.before);
    const after = Profile.from(c.diff.after);
    const mode = c.diff.mode === 'absolute' ? 'absolute' : 'normalized';
    flameSec.append(h('p', { class: 'ks-muted ks-hint', text: `Frame width: B's profile; colour: change from A (red grew, blue shrank), ${mode === 'normalized' ? 'as shares of each run\'s samples, since runs differ in length and load' : 'in samples'}.` }));
    const box = h('div');
    flameSec.append(box);
    const g = new FlameGraph(box, { before, after, mode }, { maxHeight: '60vh' });
    graph = g;
    g.showRoot();
    if (Array.isArray(c.diff.table) && c.diff.table.length) {
      const tables = h('div');
      flameSec.append(tables);
      regressionTables(tables, c.diff.table, { onPick: (r) => g.search(`^${regexEscape(r.frame)}$`) });
    }
    if (c.names_normalised) flameSec.append(h('p', { class: 'ks-muted ks-hint', text: 'JIT tier markers, lambda/proxy numbers and addresses are mapped to one name on both sides (keisoku compare --no-normalise shows raw names).' }));
  } else flameSec.append(h('p', { class: 'ks-muted ks-empty', text: 'A differential flame graph needs a profile in both runs (run with --profile perf).' }));
  app.append(h('footer', { class: 'ks-muted ks-foot', text: 'keys: / search frames · Esc reset' }));
  installKeys({ search: () => graph?.focusSearch(), reset: () => graph?.reset() });
  (window as unknown as { keisoku: unknown }).keisoku = { comparison: c, flame: graph };
  performance.mark('keisoku:first-paint');
} catch (e) {
  showFatal(app, e);
}
