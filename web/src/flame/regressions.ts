/**
 * Tables of the largest regressions and improvements of a differential
 * profile (rows computed by crates/stacks), with a noise warning where the
 * sample counts are too small to tell change from noise.
 */
import { h } from '../common/dom';
import { fmtCount, fmtSignedPct } from '../common/format';
import { DiffRow } from './profile';

/** Options of the regression tables. */
export interface RegressionOptions {
  /** Rows per table (default 25). */
  limit?: number;
  /** Called when a function's row is clicked. */
  onPick?: (row: DiffRow) => void;
}

/** Renders two tables (regressions, improvements) into `container`. */
export function regressionTables(container: HTMLElement, rows: DiffRow[], opts: RegressionOptions = {}): void {
  const limit = opts.limit ?? 25;
  const valid = rows.filter((r) => r && typeof r.frame === 'string');
  // New functions (no BEFORE, null change) rank as the largest growth.
  const key = (r: DiffRow): number =>
    r.delta_total_pct !== null && Number.isFinite(r.delta_total_pct) ? r.delta_total_pct : r.after_total > r.before_total ? 1e9 : r.after_total < r.before_total ? -1e9 : 0;
  const grew = valid.filter((r) => key(r) > 0).sort((a, b) => key(b) - key(a)).slice(0, limit);
  const shrank = valid.filter((r) => key(r) < 0).sort((a, b) => key(a) - key(b)).slice(0, limit);
  const table = (title: string, list: DiffRow[], cls: string): HTMLElement => {
    const tbody = h('tbody');
    for (const r of list) {
      const pct = (v: number | null, before: number, after: number): HTMLElement => {
        const grew = after > before;
        const text = v === null || !Number.isFinite(v) || Math.abs(v) >= 1e9 ? (before === 0 && after > 0 ? 'new' : after === 0 && before > 0 ? 'gone' : 'n/a') : fmtSignedPct(v);
        return h('td', { class: after === before ? '' : grew ? 'ks-grew' : 'ks-shrank', text });
      };
      const tr = h('tr', {},
        h('td', { class: 'ks-name', title: r.module || '' }, r.frame, r.noisy ? h('span', { class: 'ks-noisy', title: 'too few samples to tell change from noise', text: ' ⚠ noisy' }) : null),
        h('td', { text: fmtCount(r.before_self) }),
        h('td', { text: fmtCount(r.after_self) }),
        pct(r.delta_self_pct, r.before_self, r.after_self),
        h('td', { text: fmtCount(r.before_total) }),
        h('td', { text: fmtCount(r.after_total) }),
        pct(r.delta_total_pct, r.before_total, r.after_total),
      );
      if (opts.onPick) tr.addEventListener('click', () => opts.onPick?.(r));
      tbody.append(tr);
    }
    if (!list.length) tbody.append(h('tr', {}, h('td', { class: 'ks-name ks-muted', text: 'none' })));
    return h('div', {},
      h('h2', { text: title }),
      h('table', { class: `ks-table ks-diff-table ${cls}` },
        h('thead', {}, h('tr', {},
          h('th', { class: 'ks-name', text: 'function' }),
          h('th', { text: 'self before' }), h('th', { text: 'self after' }), h('th', { text: 'Δ self' }),
          h('th', { text: 'total before' }), h('th', { text: 'total after' }), h('th', { text: 'Δ total' }))),
        tbody));
  };
  const noisy = valid.some((r) => r.noisy);
  container.append(h('div', { class: 'ks-tables' }, table('Largest regressions', grew, 'ks-regressions'), table('Largest improvements', shrank, 'ks-improvements')));
  if (noisy) container.append(h('p', { class: 'ks-noisy', text: '⚠ marks functions with too few samples on either side to tell a change from noise.' }));
}
