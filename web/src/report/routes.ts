/** Section 3: the alp-like routes table, sortable, client side and access log. */
import { h, clear } from '../common/dom';
import { fmtValue } from '../charts/units';
import type { RouteRow } from './types';

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
    return COLUMNS.filter((c) => c.unit === null || c.key === 'count' || this.rows.some((r) => typeof r[c.key] === 'number'));
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
          return h('td', { text: typeof v === 'number' ? (c.unit === '' ? v.toLocaleString('en-US') : fmtValue(v, c.unit)) : '—' });
        })),
      );
    }
    if (!rows.length) this.body.append(h('tr', {}, h('td', { class: 'ks-name ks-muted', colspan: cols.length, text: 'no routes match' })));
  }
}

/** Builds the routes section with client / access-log tabs. */
export function routesSection(routes: { client?: RouteRow[]; access_log?: RouteRow[] } | undefined): HTMLElement {
  const sec = h('section', { id: 'routes', class: 'ks-section' }, h('h2', { text: 'Routes' }));
  const sources: [string, RouteRow[]][] = [
    ['client', routes?.client ?? []],
    ['access log', routes?.access_log ?? []],
  ];
  const present = sources.filter(([, rows]) => rows.length);
  if (!present.length) {
    sec.append(h('p', { class: 'ks-muted ks-empty', text: 'No per-route data: the run drove no load and recorded no access log.' }));
    return sec;
  }
  const bar = h('div', { class: 'ks-toolbar', role: 'tablist' });
  const holder = h('div');
  const filter = h('input', { type: 'search', placeholder: 'filter routes', 'aria-label': 'filter routes' });
  let table: RoutesTable | null = null;
  const show = (i: number): void => {
    clear(holder);
    table = new RoutesTable(holder, present[i][1]);
    table.setFilter(filter.value);
    bar.querySelectorAll('button').forEach((b, j) => b.setAttribute('aria-pressed', String(i === j)));
  };
  present.forEach(([label, rows], i) => bar.append(h('button', { role: 'tab', 'data-source': label, onclick: () => show(i) }, `${label} (${rows.length})`)));
  for (const [label, rows] of sources) if (!rows.length) bar.append(h('span', { class: 'ks-muted', text: `${label}: not recorded` }));
  filter.addEventListener('input', () => table?.setFilter(filter.value));
  bar.append(filter);
  sec.append(bar, holder);
  show(0);
  return sec;
}
