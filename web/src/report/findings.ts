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

/** The findings worth reading first: most severe, then highest score. */
export function rankedFindings(findings: Finding[] | undefined): Finding[] {
  const list = (findings ?? []).filter((f) => f && typeof f.title === 'string');
  return list.sort((a, b) => rank(a.severity) - rank(b.severity) || (b.score ?? 0) - (a.score ?? 0));
}

/** A finding's time range and frames, read defensively. */
function targetsOfFinding(f: Finding): { range: [number, number] | null; frames: FindingFrame[] } {
  const ev = evidenceOf(f);
  const range = Array.isArray(ev.range_ms) && ev.range_ms.length === 2 && ev.range_ms.every((x) => typeof x === 'number') ? (ev.range_ms as [number, number]) : null;
  const frames: FindingFrame[] = Array.isArray(ev.frames) ? ev.frames.filter((x) => x && typeof x.name === 'string') : [];
  return { range, frames };
}

/**
 * The first screen's answer: the top `n` findings as one line each, each a
 * button that selects its range and frames like the full card does.
 */
export function topFindings(findings: Finding[] | undefined, n: number, onFocus: (f: FindingFocus) => void): HTMLElement {
  const list = rankedFindings(findings);
  const box = h('div', { class: 'ks-top-findings' }, h('h3', { text: list.length ? `Top findings (${Math.min(n, list.length)} of ${list.length})` : 'Findings' }));
  if (!list.length) {
    box.append(h('p', { class: 'ks-muted', text: 'None: the rules saw nothing wrong in this run.' }));
    return box;
  }
  const ol = h('ol', { class: 'ks-top-list' });
  for (const f of list.slice(0, n)) {
    const { range, frames } = targetsOfFinding(f);
    const sev = f.severity ?? 'warning';
    const where = [range ? `${fmtValue(range[0], 'ms')}–${fmtValue(range[1], 'ms')}` : '', frames.length ? frames.slice(0, 2).map((x) => x.name).join(', ') : ''].filter(Boolean).join(' · ');
    const item = h(
      'li',
      { class: `ks-top-finding ks-sev-${sev}`, tabindex: 0, role: 'button', 'aria-label': `finding: ${f.title}`, title: range || frames.length ? 'click: select its time range and show its frames' : f.summary ?? '' },
      h('span', { class: `ks-badge ks-badge-${sev}`, text: sev }),
      h('span', { class: 'ks-top-title', text: f.title }),
      where ? h('span', { class: 'ks-muted ks-top-where', text: where }) : '',
    );
    const focus = (): void => onFocus({ rangeMs: range, frames: frames.map((x) => x.name) });
    item.addEventListener('click', focus);
    item.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        focus();
      }
    });
    ol.append(item);
  }
  box.append(ol);
  if (list.length > n) box.append(h('a', { href: '#findings', class: 'ks-muted', text: `all ${list.length} findings with their evidence ↓` }));
  return box;
}

/** Builds the findings section; `onFocus` runs when a finding is clicked. */
export function findingsSection(findings: Finding[] | undefined, onFocus: (f: FindingFocus) => void): HTMLElement {
  const sec = h('section', { id: 'findings', class: 'ks-section' }, h('h2', { text: 'Findings' }));
  const list = rankedFindings(findings);
  if (!list.length) {
    sec.append(h('p', { class: 'ks-muted ks-empty', text: 'No findings: the rules saw nothing wrong in this run (or it was recorded before findings existed).' }));
    return sec;
  }
  const ol = h('ol', { class: 'ks-findings' });
  for (const f of list) {
    const ev = evidenceOf(f);
    const { range, frames } = targetsOfFinding(f);
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
