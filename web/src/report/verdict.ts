/** Section 1: the verdict, headline numbers, knee, self-check warnings and metadata. */
import { h } from '../common/dom';
import { fmtValue } from '../charts/units';
import { errorCount, durationOf } from './data';
import type { RunJson, SloClause } from './types';

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

/** Builds the verdict section. */
export function verdictSection(run: RunJson): HTMLElement {
  const sec = h('section', { id: 'verdict', class: 'ks-section' }, h('h2', { text: 'Verdict' }));
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

  if (r) {
    const lat = r.latency_ms ?? {};
    const errors = errorCount(r.errors);
    const reqs = typeof r.requests === 'number' ? r.requests : null;
    const stats = h(
      'div',
      { class: 'ks-stats' },
      stat('throughput', fmtValue(r.rps, 'req/s')),
      stat('requests', reqs === null ? '—' : reqs.toLocaleString('en-US')),
      stat('errors', errors === null ? '—' : `${errors.toLocaleString('en-US')}${reqs ? ` (${fmtValue((100 * errors) / reqs, '%', true)})` : ''}`, errors ? 'ks-bad' : ''),
      stat('p50', fmtValue(lat.p50, 'ms', true)),
      stat('p80', fmtValue(lat.p80, 'ms', true)),
      stat('p99', fmtValue(lat.p99, 'ms', true)),
      stat('p99.9', fmtValue(lat['p99.9'], 'ms', true)),
      stat('max', fmtValue(lat.max, 'ms', true)),
    );
    sec.append(stats);
    const phases = r.phases ?? [];
    if (typeof r.knee === 'number' && phases[r.knee]) {
      const k = phases[r.knee];
      const at = typeof k.rate === 'number' ? `${fmtValue(k.rate, 'req/s')} offered` : `${k.connections} connection${k.connections === 1 ? '' : 's'}`;
      sec.append(h('p', { class: 'ks-knee' }, h('strong', { text: 'Knee: ' }), `${k.label ?? `phase ${r.knee}`} (${at}): ${fmtValue(k.rps, 'req/s', true)} at p99 ${fmtValue(k.latency_ms?.p99, 'ms', true)}; more load after it bought latency, not throughput.`));
    } else if (phases.length >= 3) {
      sec.append(h('p', { class: 'ks-knee ks-muted', text: 'Knee: none found; throughput kept rising with load.' }));
    }
    if (typeof r.best_passing_phase === 'number' && phases[r.best_passing_phase]) {
      sec.append(h('p', {}, h('strong', { text: 'Highest phase meeting the SLO: ' }), phases[r.best_passing_phase].label ?? String(r.best_passing_phase)));
    }
    if (typeof r.max_rate === 'number') sec.append(h('p', {}, h('strong', { text: 'Highest rate meeting the SLO: ' }), fmtValue(r.max_rate, 'req/s', true)));
  }
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
  const rows: [string, string][] = [
    ['run', `${meta.name ? `${meta.name} · ` : ''}${meta.id ?? '—'}`],
    ['target', meta.target ?? '—'],
    ['command', meta.command ?? '—'],
    ['started', fmtDate(meta.started_unix_ms)],
    ['duration', fmtValue(durationOf(run), 'ms', true)],
    ['model', meta.model ?? r?.model ?? '—'],
    ['status', meta.interrupted ? 'interrupted' : meta.status ?? 'complete'],
    ['machine', [m.hostname, m.cores ? `${m.cores} cores` : '', m.cpu_model, m.kernel ? `Linux ${m.kernel}` : '', m.memory_bytes ? fmtValue(m.memory_bytes, 'bytes') : ''].filter(Boolean).join(' · ') || '—'],
  ];
  if (tags) rows.push(['tags', tags]);
  sec.append(h('dl', { class: 'ks-meta' }, ...rows.flatMap(([k, v]) => [h('dt', { text: k }), h('dd', { text: v })])));
  return sec;
}
