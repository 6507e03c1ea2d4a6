/** Section 1: the verdict, headline numbers, knee, self-check warnings and metadata. */
import { h, clear } from '../common/dom';
import { fmtValue } from '../charts/units';
import type { TimeRange } from '../charts/timelines';
import { errorsOf, durationOf, targetsOf } from './data';
import { histCount, histPercentileMs, routeInRange, type Hist } from './buckets';
import type { Latency, RunJson, SloClause } from './types';
function fmtDate(ms: number | undefined): string {
  if (typeof ms !== 'number') return '—';
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? '—' : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}

function stat(label: string, value: string, cls = ''): HTMLElement {
  return h('div', { class: `ks-stat ${cls}` }, h('div', { class: 'ks-stat-value', text: value }), h('div', { class: 'ks-stat-label', text: label }));
}

function clauseRow(c: SloClause): HTMLElement {
  const unit = c.unit === '%' ? '%' : c.unit;
  const margin = Number.isFinite(c.margin) ? `${c.margin >= 0 ? '+' : ''}${fmtValue(c.margin, unit, true)}` : '—';
  return h(
    'tr',
    { class: c.pass ? 'ks-pass' : 'ks-fail' },
    h('td', { class: 'ks-name' }, h('span', { class: `ks-badge ${c.pass ? 'ks-badge-pass' : 'ks-badge-fail'}`, text: c.pass ? 'PASS' : 'FAIL' })),
    h('td', { class: 'ks-name', text: c.clause }),
    h('td', { text: fmtValue(c.measured, unit, true) }),
    h('td', { text: fmtValue(c.limit, unit, true) }),
    h('td', { text: margin, title: 'how far inside (+) or outside (−) the limit the run stayed' }),
  );
}

/** The error tile's text and the split shown under it. */
function errorTiles(run: RunJson): { value: string; split: string; bad: boolean } {
  const r = run.results ?? null;
  const e = errorsOf(r);
  const reqs = typeof r?.requests === 'number' ? r.requests : null;
  if (!e) return { value: '—', split: '', bad: false };
  // Transport errors are requests without a response; `requests` counts
  // responses, so the rate is over every attempt.
  const attempts = reqs === null ? null : reqs + e.transport;
  const value = `${e.total.toLocaleString('en-US')}${attempts ? ` (${fmtValue((100 * e.total) / attempts, '%')})` : ''}`;
  const parts: string[] = [];
  if (e.http5xx) parts.push(`HTTP 5xx ${e.http5xx.toLocaleString('en-US')}${e.codes5xx.length ? ` (${e.codes5xx.map(([c, n]) => `${c}: ${n.toLocaleString('en-US')}`).join(', ')})` : ''}`);
  if (e.transport) parts.push(`transport ${e.transport.toLocaleString('en-US')}${e.byKind.length ? ` (${e.byKind.map(([k, n]) => `${k} ${n.toLocaleString('en-US')}`).join(', ')})` : ''}`);
  return { value, split: parts.join(' · '), bad: e.total > 0 };
}

/** The headline tiles, for the whole run or recomputed for a range. */
interface Tiles {
  rps: number | null;
  requests: number | null;
  errors: string;
  errorsBad: boolean;
  lat: Latency;
}

/**
 * The verdict: SLO banner, headline tiles (recomputed for a selected range
 * from route_seconds' histograms), knee, a slot for the top findings, the
 * SLO clauses, warnings and the run's metadata (folded).
 */
export class VerdictView {
  readonly sec: HTMLElement;
  /** Where the page puts the top findings (between the knee and the clauses). */
  readonly findingsSlot: HTMLElement;
  private readonly tiles: HTMLElement;
  private readonly tilesNote: HTMLElement;
  private readonly whole: Tiles | null;

  constructor(private readonly run: RunJson) {
    this.sec = h('section', { id: 'verdict', class: 'ks-section' });
    this.findingsSlot = h('div', { class: 'ks-findings-slot' });
    this.tiles = h('div', { class: 'ks-stats' });
    this.tilesNote = h('p', { class: 'ks-muted ks-tiles-note', 'aria-live': 'polite' });
    const r = run.results ?? null;
    if (r) {
      const e = errorTiles(run);
      this.whole = { rps: typeof r.rps === 'number' ? r.rps : null, requests: typeof r.requests === 'number' ? r.requests : null, errors: e.value, errorsBad: e.bad, lat: r.latency_ms ?? {} };
    } else this.whole = null;
    this.build();
  }

  /** Recomputes the tiles for a range (null: the whole run). */
  setRange(range: TimeRange | null): void {
    if (!this.whole) return;
    if (!range) {
      this.renderTiles(this.whole);
      this.tilesNote.textContent = '';
      return;
    }
    // The client's view when it drove the load, else the access log's.
    const client = this.run.route_seconds?.client;
    const log = this.run.route_seconds?.access_log;
    const fromLog = !(Array.isArray(client) && client.length) && Array.isArray(log) && log.length > 0;
    const routes = (fromLog ? log : client) ?? [];
    const label = `${fmtValue(range.fromMs, 'ms')} – ${fmtValue(range.toMs, 'ms')}`;
    if (!routes.length) {
      this.tilesNote.textContent = `Range ${label} selected; this run has no per-second route data, so the numbers above are the whole run's.`;
      return;
    }
    const hist: Hist = new Map();
    let count = 0;
    let errors = 0;
    let max: number | null = null;
    for (const rs of routes) {
      const rr = routeInRange(rs, range);
      count += rr.count;
      errors += rr.errors;
      for (const [k, n] of rr.hist) hist.set(k, (hist.get(k) ?? 0) + n);
      if (rr.maxMs !== null && (max === null || rr.maxMs > max)) max = rr.maxMs;
    }
    const secs = Math.max(1e-9, (range.toMs - range.fromMs) / 1000);
    const q = (p: number): number | undefined => histPercentileMs(hist, p) ?? undefined;
    this.renderTiles({
      rps: count / secs,
      requests: count,
      errors: `${errors.toLocaleString('en-US')}${count ? ` (${fmtValue((100 * errors) / count, '%')})` : ''}`,
      errorsBad: errors > 0,
      lat: histCount(hist) ? { p50: q(50), p80: q(80), p99: q(99), 'p99.9': q(99.9), max: max ?? undefined } : {},
    });
    this.tilesNote.textContent = `Numbers for the selected range ${label}${fromLog ? ', from the access log' : ''} (percentiles from per-second histograms, within 9%); Esc for the whole run.`;
  }

  private renderTiles(t: Tiles): void {
    clear(this.tiles);
    this.tiles.append(
      stat('throughput', fmtValue(t.rps, 'req/s')),
      stat('requests', t.requests === null ? '—' : Math.round(t.requests).toLocaleString('en-US')),
      stat('errors (incl. 5xx)', t.errors, t.errorsBad ? 'ks-bad' : ''),
      stat('p50', fmtValue(t.lat.p50, 'ms')),
      stat('p80', fmtValue(t.lat.p80, 'ms')),
      stat('p99', fmtValue(t.lat.p99, 'ms')),
      stat('p99.9', fmtValue(t.lat['p99.9'], 'ms')),
      stat('max', fmtValue(t.lat.max, 'ms')),
    );
  }

  private build(): void {
    const { run, sec } = this;
    const r = run.results ?? null;
    const meta = run.run ?? {};
    const slo = r?.slo ?? null;
    const banner = h('div', { class: 'ks-verdict-banner' });
    if (slo) {
      banner.classList.add(slo.pass ? 'ks-pass' : 'ks-fail');
      banner.append(h('strong', { text: slo.pass ? 'SLO met' : 'SLO missed' }), ` · ${slo.clauses.filter((c) => c.pass).length} of ${slo.clauses.length} clauses pass`);
    } else if (r) {
      banner.append(h('strong', { text: 'No SLO given' }), h('span', { class: 'ks-muted', text: ' · pass --slo to judge the run' }));
    } else {
      banner.append(h('strong', { text: 'No load results' }), h('span', { class: 'ks-muted', text: ' · recorded without keisoku driving the load' }));
    }
    if (meta.interrupted) banner.append(h('span', { class: 'ks-badge ks-badge-fail', text: 'interrupted' }));
    if (r?.partial) banner.append(h('span', { class: 'ks-badge ks-badge-fail', text: 'partial' }));
    sec.append(banner);

    if (r && this.whole) {
      this.renderTiles(this.whole);
      sec.append(this.tiles);
      const split = errorTiles(run).split;
      if (split) sec.append(h('p', { class: 'ks-error-split' }, h('strong', { text: 'Errors: ' }), split));
      sec.append(this.tilesNote);
      const phases = r.phases ?? [];
      if (typeof r.knee === 'number' && phases[r.knee]) {
        const k = phases[r.knee];
        const at = typeof k.rate === 'number' ? `${fmtValue(k.rate, 'req/s')} offered` : `${k.connections} connection${k.connections === 1 ? '' : 's'}`;
        sec.append(h('p', { class: 'ks-knee' }, h('strong', { text: 'Knee: ' }), `${k.label ?? `phase ${r.knee}`} (${at}): ${fmtValue(k.rps, 'req/s')} at p99 ${fmtValue(k.latency_ms?.p99, 'ms')}; more load after it bought latency, not throughput.`));
      } else if (phases.length >= 3) {
        sec.append(h('p', { class: 'ks-knee ks-muted', text: 'Knee: none found; throughput kept rising with load.' }));
      } else {
        sec.append(h('p', { class: 'ks-knee ks-muted', text: 'Knee: not measured (a sweep of three or more steps finds it: --sweep-connections or --sweep-rate).' }));
      }
      if (typeof r.best_passing_phase === 'number' && phases[r.best_passing_phase]) {
        sec.append(h('p', {}, h('strong', { text: 'Highest phase meeting the SLO: ' }), phases[r.best_passing_phase].label ?? String(r.best_passing_phase)));
      }
      if (typeof r.max_rate === 'number') sec.append(h('p', {}, h('strong', { text: 'Highest rate meeting the SLO: ' }), fmtValue(r.max_rate, 'req/s')));
    }
    sec.append(this.findingsSlot);
    if (slo?.clauses.length) {
      sec.append(
        h(
          'table',
          { class: 'ks-table ks-slo' },
          h('thead', {}, h('tr', {}, h('th', { class: 'ks-name', text: '' }), h('th', { class: 'ks-name', text: 'clause' }), h('th', { text: 'measured' }), h('th', { text: 'limit' }), h('th', { text: 'margin' }))),
          h('tbody', {}, ...slo.clauses.map(clauseRow)),
        ),
      );
    }
    const warnings = r?.warnings ?? [];
    const reasons = r?.error_reasons ?? [];
    if (warnings.length || reasons.length) {
      const box = h('div', { class: 'ks-warnings', role: 'note' });
      if (warnings.length) box.append(h('strong', { text: 'Generator self-check: the numbers may describe keisoku, not the target' }), h('ul', {}, ...warnings.map((w) => h('li', { text: w }))));
      if (reasons.length) box.append(h('strong', { text: 'Why requests failed' }), h('ul', {}, ...reasons.map((w) => h('li', { text: w }))));
      sec.append(box);
    }

    const m = meta.machine ?? {};
    const tags = Object.entries(meta.tags ?? {}).map(([k, v]) => `${k}=${v}`).join(', ');
    const targets = targetsOf(run);
    const rows: [string, string][] = [
      ['run', `${meta.name ? `${meta.name} · ` : ''}${meta.id ?? '—'}`],
      [targets.length > 1 ? `targets (${targets.length})` : 'target', targets.length ? targets.join('\n') : '—'],
      ['command', meta.command ?? '—'],
      ['started', fmtDate(meta.started_unix_ms)],
      ['duration', fmtValue(durationOf(run), 'ms')],
      ['model', meta.model ?? r?.model ?? '—'],
      ['status', meta.interrupted ? 'interrupted' : meta.status ?? 'complete'],
      ['machine', [m.hostname, m.cores ? `${m.cores} cores` : '', m.cpu_model, m.kernel ? `Linux ${m.kernel}` : '', m.memory_bytes ? fmtValue(m.memory_bytes, 'bytes') : ''].filter(Boolean).join(' · ') || '—'],
    ];
    if (tags) rows.push(['tags', tags]);
    // Metadata answers "which run is this", not "how did it go": folded.
    sec.append(h('details', { class: 'ks-meta-box' }, h('summary', { text: 'Run details' }), h('dl', { class: 'ks-meta' }, ...rows.flatMap(([k, v]) => [h('dt', { text: k }), h('dd', { text: v })]))));
  }
}

/** Builds the verdict section (whole run). */
export function verdictSection(run: RunJson): HTMLElement {
  return new VerdictView(run).sec;
}
