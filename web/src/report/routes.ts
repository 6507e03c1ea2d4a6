/** Section 3: the alp-like routes table, sortable, client side and access log. */
import { h, clear } from '../common/dom';
import { fmtValue } from '../charts/units';
import type { TimeRange } from '../charts/timelines';
import { histPercentileMs, routeInRange } from './buckets';
import type { RouteRow, RouteSeconds } from './types';

/** Columns in alp's order; `unit` drives formatting. */
const COLUMNS: { key: string; label: string; unit: string | null; title?: string }[] = [
  { key: 'method', label: 'method', unit: null },
  { key: 'uri', label: 'uri', unit: null },
  { key: 'count', label: 'count', unit: '' },
  { key: '1xx', label: '1xx', unit: '' },
  { key: '2xx', label: '2xx', unit: '' },
  { key: '3xx', label: '3xx', unit: '' },
  { key: '4xx', label: '4xx', unit: '' },
  { key: '5xx', label: '5xx', unit: '' },
  { key: 'errors', label: 'errors', unit: '', title: 'transport errors + HTTP 5xx' },
  { key: 'min', label: 'min', unit: 'ms' },
  { key: 'max', label: 'max', unit: 'ms' },
  { key: 'sum', label: 'sum', unit: 'ms', title: 'total time spent on this route' },
  { key: 'avg', label: 'avg', unit: 'ms' },
  { key: 'p50', label: 'p50', unit: 'ms' },
  { key: 'p90', label: 'p90', unit: 'ms' },
  { key: 'p95', label: 'p95', unit: 'ms' },
  { key: 'p99', label: 'p99', unit: 'ms' },
  { key: 'stddev', label: 'stddev', unit: 'ms' },
  { key: 'min_body', label: 'min body', unit: 'bytes' },
  { key: 'max_body', label: 'max body', unit: 'bytes' },
  { key: 'sum_body', label: 'sum body', unit: 'bytes' },
  { key: 'avg_body', label: 'avg body', unit: 'bytes' },
];

/** A sortable table of route rows; click a header to sort, again to reverse. */
export class RoutesTable {
  readonly root: HTMLElement;
  private sortKey = 'sum';
  private desc = true;
  private filter = '';
  private readonly body: HTMLElement;
  private readonly head: HTMLElement;

  constructor(container: HTMLElement, private readonly rows: RouteRow[]) {
    const cols = this.columns();
    if (!cols.some((c) => c.key === this.sortKey)) this.sortKey = 'count';
    this.head = h('tr');
    this.body = h('tbody');
    this.root = h('div', { class: 'ks-routes-wrap' }, h('table', { class: 'ks-table ks-routes' }, h('thead', {}, this.head), this.body));
    container.append(this.root);
    if (COLUMNS.some((c) => c.key.endsWith('_body') && this.rows.some((r) => typeof r[c.key] === 'number') && this.unmeasured(c.key))) {
      container.append(h('p', { class: 'ks-muted ks-routes-note', text: 'Body sizes: not measured by this source.' }));
    }
    this.render();
  }

  /** Restricts to rows whose method or uri contains `text` (case-insensitive). */
  setFilter(text: string): void {
    this.filter = text.toLowerCase();
    this.render();
  }

  /** Sorts by a column key. */
  sortBy(key: string, desc?: boolean): void {
    if (this.sortKey === key && desc === undefined) this.desc = !this.desc;
    else {
      this.sortKey = key;
      this.desc = desc ?? !['method', 'uri'].includes(key);
    }
    this.render();
  }

  /** Columns present in the data (body sizes only when recorded). */
  private columns(): typeof COLUMNS {
    // Columns the source did not measure are left out (and named under the
    // table), so the measured ones fit instead of being clipped at the edge.
    return COLUMNS.filter((c) => c.unit === null || c.key === 'count' || (this.rows.some((r) => typeof r[c.key] === 'number') && !this.unmeasured(c.key)));
  }

  /**
   * Body sizes the source did not measure: the client counts no body bytes
   * on some paths and writes 0; such columns are left out and named under
   * the table, never shown as "0 B".
   */
  private unmeasured(key: string): boolean {
    // Only when every body column is zero: a 0 B minimum beside a 420 B
    // maximum is a measurement (an empty answer).
    return key.endsWith('_body') && this.rows.every((r) => COLUMNS.every((c) => !c.key.endsWith('_body') || !r[c.key]));
  }

  private render(): void {
    const cols = this.columns();
    clear(this.head);
    for (const c of cols) {
      const arrow = c.key === this.sortKey ? (this.desc ? ' ▼' : ' ▲') : '';
      this.head.append(h('th', { class: c.unit === null ? 'ks-name' : '', title: c.title ?? `sort by ${c.label}`, 'aria-sort': c.key === this.sortKey ? (this.desc ? 'descending' : 'ascending') : undefined, 'data-key': c.key, onclick: () => this.sortBy(c.key) }, c.label + arrow));
    }
    const key = this.sortKey;
    const sign = this.desc ? -1 : 1;
    const rows = this.rows
      .filter((r) => !this.filter || `${r.method ?? ''} ${r.uri ?? ''}`.toLowerCase().includes(this.filter))
      .sort((a, b) => {
        const x = a[key];
        const y = b[key];
        if (typeof x === 'number' && typeof y === 'number') return sign * (x - y);
        return sign * String(x ?? '').localeCompare(String(y ?? ''));
      });
    clear(this.body);
    for (const r of rows) {
      this.body.append(
        h('tr', {}, ...cols.map((c) => {
          const v = r[c.key];
          if (c.unit === null) return h('td', { class: 'ks-name', text: String(v ?? '') });
          return h('td', { class: c.key === '5xx' && typeof v === 'number' && v > 0 ? 'ks-bad' : '', text: typeof v === 'number' ? (c.unit === '' ? v.toLocaleString('en-US') : fmtValue(v, c.unit)) : '—' });
        })),
      );
    }
    if (!rows.length) this.body.append(h('tr', {}, h('td', { class: 'ks-name ks-muted', colspan: cols.length, text: 'no routes match' })));
  }
}

/** Route rows for a range, recomputed from per-second histograms. */
export function rowsInRange(list: RouteSeconds[], range: TimeRange | null): RouteRow[] {
  const rows: RouteRow[] = [];
  for (const rs of list) {
    const r = routeInRange(rs, range);
    if (!r.count) continue;
    rows.push({
      method: r.method,
      uri: r.route,
      count: r.count,
      errors: r.errors,
      p50: histPercentileMs(r.hist, 50),
      p90: histPercentileMs(r.hist, 90),
      p95: histPercentileMs(r.hist, 95),
      p99: histPercentileMs(r.hist, 99),
      max: r.maxMs,
    });
  }
  return rows;
}

/** The routes section: its element and the range it follows. */
export interface RoutesSection {
  sec: HTMLElement;
  setRange(range: TimeRange | null): void;
}

/**
 * Builds the routes section with client / access-log tabs. With a range
 * selected, a source that has per-second data (route_seconds) shows its
 * routes recomputed for that range.
 */
export function routesSection(routes: { client?: RouteRow[]; access_log?: RouteRow[] } | undefined, perSecond?: { client?: RouteSeconds[]; access_log?: RouteSeconds[] }): RoutesSection {
  const sec = h('section', { id: 'routes', class: 'ks-section' }, h('h2', { text: 'Routes' }));
  const sources: [string, RouteRow[], RouteSeconds[]][] = [
    ['client', routes?.client ?? [], Array.isArray(perSecond?.client) ? perSecond.client : []],
    ['access log', routes?.access_log ?? [], Array.isArray(perSecond?.access_log) ? perSecond.access_log : []],
  ];
  const present = sources.filter(([, rows]) => rows.length);
  if (!present.length) {
    sec.append(h('p', { class: 'ks-muted ks-empty', text: 'No per-route data: the run drove no load and recorded no access log.' }));
    return { sec, setRange: () => {} };
  }
  const bar = h('div', { class: 'ks-toolbar', role: 'tablist' });
  const holder = h('div');
  const note = h('p', { class: 'ks-muted ks-routes-note', 'aria-live': 'polite' });
  const filter = h('input', { type: 'search', placeholder: 'filter routes', 'aria-label': 'filter routes' });
  let table: RoutesTable | null = null;
  let shown = 0;
  let range: TimeRange | null = null;
  const show = (i: number): void => {
    shown = i;
    clear(holder);
    const [label, rows, seconds] = present[i];
    if (range && seconds.length) {
      table = new RoutesTable(holder, rowsInRange(seconds, range));
      note.textContent = `${label}: routes in ${fmtValue(range.fromMs, 'ms')} – ${fmtValue(range.toMs, 'ms')}, from per-second histograms (percentiles ±9%).`;
    } else {
      table = new RoutesTable(holder, rows);
      note.textContent = range ? `${label}: whole run (this source has no per-second route data for a range).` : '';
    }
    table.setFilter(filter.value);
    bar.querySelectorAll('button').forEach((b, j) => b.setAttribute('aria-pressed', String(i === j)));
  };
  present.forEach(([label, rows], i) => bar.append(h('button', { role: 'tab', 'data-source': label, onclick: () => show(i) }, `${label} (${rows.length})`)));
  for (const [label, rows] of sources) if (!rows.length) bar.append(h('span', { class: 'ks-muted', text: `${label}: not recorded` }));
  filter.addEventListener('input', () => table?.setFilter(filter.value));
  bar.append(filter);
  sec.append(bar, note, holder);
  show(0);
  return {
    sec,
    setRange: (r) => {
      range = r;
      show(shown);
    },
  };
}
