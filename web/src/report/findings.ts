/**
 * Section 6: findings (crates/findings). Each shows what is wrong, its
 * evidence and what to try; clicking one selects its time range and
 * highlights its frames.
 */
import { h } from '../common/dom';
import { fmtValue } from '../charts/units';
import type { Finding, FindingEvidence, FindingFrame } from './types';

/** What a click on a finding asks the page to do. */
export interface FindingFocus {
  rangeMs: [number, number] | null;
  frames: string[];
}

function evidenceOf(f: Finding): FindingEvidence {
  const e = f.evidence;
  if (typeof e === 'string') return { text: [e] };
  if (Array.isArray(e)) return { text: e.map(String) };
  return e ?? {};
}

function rank(sev: string | undefined): number {
  return { critical: 0, high: 0, error: 0, warning: 1, medium: 1, info: 2, low: 2 }[sev ?? ''] ?? 1;
}

/** Builds the findings section; `onFocus` runs when a finding is clicked. */
export function findingsSection(findings: Finding[] | undefined, onFocus: (f: FindingFocus) => void): HTMLElement {
  const sec = h('section', { id: 'findings', class: 'ks-section' }, h('h2', { text: 'Findings' }));
  const list = (findings ?? []).filter((f) => f && typeof f.title === 'string');
  if (!list.length) {
    sec.append(h('p', { class: 'ks-muted ks-empty', text: 'No findings: the rules saw nothing wrong in this run (or it was recorded before findings existed).' }));
    return sec;
  }
  list.sort((a, b) => rank(a.severity) - rank(b.severity) || (b.score ?? 0) - (a.score ?? 0));
  const ol = h('ol', { class: 'ks-findings' });
  for (const f of list) {
    const ev = evidenceOf(f);
    const range = Array.isArray(ev.range_ms) && ev.range_ms.length === 2 && ev.range_ms.every((x) => typeof x === 'number') ? (ev.range_ms as [number, number]) : null;
    const frames: FindingFrame[] = Array.isArray(ev.frames) ? ev.frames.filter((x) => x && typeof x.name === 'string') : [];
    const text = typeof ev.text === 'string' ? [ev.text] : Array.isArray(ev.text) ? ev.text : [];
    const sev = f.severity ?? 'warning';
    const item = h(
      'li',
      { class: `ks-finding ks-sev-${sev}`, tabindex: 0, role: 'button', 'aria-label': `finding: ${f.title}`, title: range || frames.length ? 'click to select its time range and frames' : '' },
      h('div', { class: 'ks-finding-head' }, h('span', { class: `ks-badge ks-badge-${sev}`, text: sev }), h('strong', { text: f.title })),
    );
    if (f.summary) item.append(h('p', { text: f.summary }));
    const evList = h('ul', { class: 'ks-evidence' });
    for (const t of text) evList.append(h('li', { text: t }));
    if (range) evList.append(h('li', { text: `time: ${fmtValue(range[0], 'ms', true)} – ${fmtValue(range[1], 'ms', true)}` }));
    if (ev.series?.length) evList.append(h('li', { text: `series: ${ev.series.join(', ')}` }));
    if (ev.phases?.length) evList.append(h('li', { text: `phases: ${ev.phases.join(', ')}` }));
    for (const fr of frames) evList.append(h('li', { class: 'ks-frame' }, h('code', { text: fr.name }), typeof fr.share === 'number' ? ` ${fmtValue(fr.share * 100, '%', true)} of samples` : ''));
    if (evList.childElementCount) item.append(h('div', { class: 'ks-evidence-head ks-muted', text: 'evidence' }), evList);
    if (f.impact) item.append(h('p', {}, h('span', { class: 'ks-muted', text: 'impact: ' }), f.impact));
    if (f.suggestion) item.append(h('p', { class: 'ks-suggestion' }, h('span', { class: 'ks-muted', text: 'try: ' }), f.suggestion));
    const focus = (): void => {
      ol.querySelectorAll('.ks-finding').forEach((x) => x.classList.remove('ks-selected'));
      item.classList.add('ks-selected');
      onFocus({ rangeMs: range, frames: frames.map((x) => x.name) });
    };
    item.addEventListener('click', focus);
    item.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        focus();
      }
    });
    ol.append(item);
  }
  sec.append(ol);
  return sec;
}
