/**
 * Tables of the largest regressions and improvements of a differential
 * profile (rows computed by crates/stacks), ranked as `keisoku diff` ranks
 * them: by the change of each function's share of all samples in
 * percentage points (its own, then with callees), rows too small to tell
 * from sampling noise last and marked. A relative change would put every 1 -> 3 sample function above
 * a library going from 63% to 92% of the samples.
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
  /** Each side's total weight, for rows written before the share fields. */
  beforeSum?: number;
  afterSum?: number;
}

/** A row with its shares filled in (from the row, else from the sums). */
export interface RankedRow extends DiffRow {
  before_share_pct: number;
  after_share_pct: number;
  delta_share_pp: number;
  before_self_share_pct: number;
  after_self_share_pct: number;
  /** Change of self share (pp) when it moved, else of total share: ranks and classifies. */
  key_pp: number;
}

/**
 * Regressions (share grew) and improvements (share fell), each in the
 * order crates/stacks ranks them (`rank_rows`): beyond noise first, then by
 * |change of self share|, then |change of total share| (pp), then by name.
 * Self first: it is where the time is spent and does not depend on how
 * well a JIT profile's callers were unwound.
 */
export function rankRows(rows: DiffRow[], beforeSum = 0, afterSum = 0): { grew: RankedRow[]; shrank: RankedRow[] } {
  const share = (v: number, sum: number): number => (sum > 0 ? (100 * v) / sum : 0);
  const num = (v: unknown, fallback: number): number => (typeof v === 'number' ? v : fallback);
  const ranked: RankedRow[] = rows
    .filter((r) => r && typeof r.frame === 'string')
    .map((r) => {
      const x = r as DiffRow & { before_self_share_pct?: number; after_self_share_pct?: number };
      const b = num(x.before_share_pct, share(x.before_total, beforeSum));
      const a = num(x.after_share_pct, share(x.after_total, afterSum));
      const bs = num(x.before_self_share_pct, share(x.before_self, beforeSum));
      const as = num(x.after_self_share_pct, share(x.after_self, afterSum));
      const d = num(x.delta_share_pp, a - b);
      const ds = as - bs;
      return { ...x, before_share_pct: b, after_share_pct: a, delta_share_pp: d, before_self_share_pct: bs, after_self_share_pct: as, key_pp: Math.abs(ds) > 1e-9 ? ds : d };
    });
  const selfPp = (r: RankedRow): number => Math.abs(r.after_self_share_pct - r.before_self_share_pct);
  ranked.sort((x, y) => Number(x.noisy) - Number(y.noisy) || selfPp(y) - selfPp(x) || Math.abs(y.delta_share_pp) - Math.abs(x.delta_share_pp) || (x.frame < y.frame ? -1 : x.frame > y.frame ? 1 : 0));
  // Rows are written with three decimals: below that a share did not move.
  return { grew: ranked.filter((r) => r.key_pp > 1e-9), shrank: ranked.filter((r) => r.key_pp < -1e-9) };
}

/** A change of share in percentage points, e.g. `+29.3 pp`. */
export function fmtPp(v: number): string {
  const a = Math.abs(v);
  const digits = a >= 10 ? 1 : a >= 0.1 ? 2 : 3;
  return `${v > 0 ? '+' : v < 0 ? '−' : '±'}${a.toFixed(digits)} pp`;
}

/** Renders two tables (regressions, improvements) into `container`. */
export function regressionTables(container: HTMLElement, rows: DiffRow[], opts: RegressionOptions = {}): void {
  const limit = opts.limit ?? 25;
  const ranked = rankRows(rows, opts.beforeSum, opts.afterSum);
  const grew = ranked.grew.slice(0, limit);
  const shrank = ranked.shrank.slice(0, limit);
  const valid = [...grew, ...shrank];
  const table = (title: string, list: RankedRow[], cls: string): HTMLElement => {
    const tbody = h('tbody');
    for (const r of list) {
      const pct = (v: number | null, before: number, after: number): HTMLElement => {
        const grew = after > before;
        const text = v === null || !Number.isFinite(v) || Math.abs(v) >= 1e9 ? (before === 0 && after > 0 ? 'new' : after === 0 && before > 0 ? 'gone' : 'n/a') : fmtSignedPct(v);
        return h('td', { class: after === before ? '' : grew ? 'ks-grew' : 'ks-shrank', text });
      };
      const tr = h('tr', { 'data-frame': r.frame, 'data-pp': r.key_pp.toFixed(3), 'data-self-pp': (r.after_self_share_pct - r.before_self_share_pct).toFixed(3), 'data-total-pp': r.delta_share_pp.toFixed(3) },
        h('td', { class: 'ks-name', title: r.module || '' }, r.frame, r.noisy ? h('span', { class: 'ks-noisy', title: 'too few samples to tell change from noise', text: ' ⚠ noisy' }) : null),
        h('td', { class: 'ks-share', text: `${r.before_self_share_pct.toFixed(1)}% → ${r.after_self_share_pct.toFixed(1)}%` }),
        h('td', { class: r.key_pp > 0 ? 'ks-grew ks-pp' : 'ks-shrank ks-pp', text: fmtPp(r.after_self_share_pct - r.before_self_share_pct) }),
        h('td', { class: 'ks-share', text: `${r.before_share_pct.toFixed(1)}% → ${r.after_share_pct.toFixed(1)}%` }),
        h('td', { class: r.delta_share_pp > 0 ? 'ks-grew ks-pp' : r.delta_share_pp < 0 ? 'ks-shrank ks-pp' : 'ks-pp', text: fmtPp(r.delta_share_pp) }),
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
          h('th', { text: 'self share', title: 'samples in the function itself, as a percent of each side\'s samples' }), h('th', { text: 'Δ self', title: 'change of self share in percentage points: the ranking' }),
          h('th', { text: 'total share', title: 'stacks through the function, as a percent of each side\'s samples' }), h('th', { text: 'Δ total', title: 'change of total share in percentage points: ranks rows whose self share did not move' }),
          h('th', { text: 'self before' }), h('th', { text: 'self after' }), h('th', { text: 'self %' }),
          h('th', { text: 'total before' }), h('th', { text: 'total after' }), h('th', { text: 'total %' }))),
        tbody));
  };
  const noisy = valid.some((r) => r.noisy);
  container.append(h('div', { class: 'ks-tables' }, table('Largest regressions', grew, 'ks-regressions'), table('Largest improvements', shrank, 'ks-improvements')));
  if (noisy) container.append(h('p', { class: 'ks-noisy', text: '⚠ marks functions with too few samples on either side to tell a change from noise.' }));
}
