/**
 * The exact call graph of a cProfile/pstats input (docs/profile-json.md,
 * `callgraph`): pstats' table (ncalls, tottime, percall, cumtime, percall),
 * sortable, with the callers and callees of the selected function, and the
 * per-request table of a werkzeug directory. The flame graph of such an
 * input is estimated from this graph; this table is what was recorded.
 */
import { h, clear } from '../common/dom';
import { regexEscape } from './functable';
import './callgraph.css';

/** One caller edge as profile JSON writes it. */
export interface CallEdgeJson {
  caller: number;
  nc: number;
  cc: number;
  tt: number;
  ct: number;
  timed: boolean;
}

/** One function as profile JSON writes it. */
export interface CallFunctionJson {
  label: string;
  cc: number;
  nc: number;
  tt: number;
  ct: number;
  callers: CallEdgeJson[];
  listed: boolean;
}

/** One werkzeug request profile. */
export interface CallRequestJson {
  file: string;
  method: string;
  path: string;
  elapsed_ms: number;
  unix_time: number | null;
  total_tt: number;
}

/** The `callgraph` member of profile JSON. */
export interface CallGraphJson {
  flame: string;
  profiles: number;
  functions: CallFunctionJson[];
  requests: CallRequestJson[];
}

type SortKey = 'tt' | 'ct' | 'nc';
const MAX_ROWS = 300;

/** pstats' `%8.3f`. */
const f3 = (x: number): string => x.toFixed(3);
/** pstats' ncalls column: "nc/cc" when recursion makes them differ. */
export const ncalls = (nc: number, cc: number): string => (nc === cc ? String(nc) : `${nc}/${cc}`);

/** The call graph of a page's profile data, when it has a well-formed one. */
export function callGraphOf(pj: unknown): CallGraphJson | null {
  const cg = (pj as { callgraph?: unknown } | null)?.callgraph as CallGraphJson | undefined;
  return cg && Array.isArray(cg.functions) && Array.isArray(cg.requests) ? cg : null;
}

/** Functions in table order: largest first, ties in the profile's order (as pstats). */
export function sortedFunctions(cg: CallGraphJson, key: SortKey): number[] {
  const idx = cg.functions.map((_, i) => i).filter((i) => cg.functions[i].listed);
  return idx.sort((a, b) => cg.functions[b][key] - cg.functions[a][key] || a - b);
}

/** The call-graph section; `onPick` gets a regex for the picked function's frame. */
export class CallGraphTable {
  readonly root: HTMLElement;
  private sortBy: SortKey = 'tt';
  private selected: number | null = null;
  private main: HTMLElement;
  private side: HTMLElement;
  private callees: { f: number; e: CallEdgeJson }[][];

  constructor(private readonly cg: CallGraphJson, private readonly onPick: (re: string) => void) {
    this.callees = cg.functions.map(() => []);
    cg.functions.forEach((f, i) => f.callers.forEach((e) => this.callees[e.caller]?.push({ f: i, e })));
    let calls = 0;
    let prim = 0;
    let total = 0;
    for (const f of cg.functions) {
      if (!f.listed) continue;
      calls += f.nc;
      prim += f.cc;
      total += f.tt;
    }
    this.main = h('div', { class: 'ks-functable-main' });
    this.side = h('div', { class: 'ks-functable-side' });
    const merged = cg.profiles > 1 ? ` in ${cg.profiles} profiles merged` : '';
    this.root = h(
      'section',
      { class: 'ks-callgraph' },
      h('h2', { text: 'Call graph (exact, as recorded)' }),
      h('p', {
        class: 'ks-muted ks-callgraph-note',
        text: `${calls} function calls (${prim} primitive calls) in ${total.toFixed(3)} seconds${merged}. The flame graph above is ${cg.flame}; this table is the profiler's own numbers. Click a row for its callers and callees.`,
      }),
      this.requestsTable(),
      h('div', { class: 'ks-functable' }, this.main, this.side),
    );
    this.render();
  }

  private requestsTable(): HTMLElement | null {
    const r = this.cg.requests;
    if (!r.length) return null;
    const rows = r.slice(0, MAX_ROWS).map((q) =>
      h(
        'tr',
        {},
        h('td', { text: `${q.elapsed_ms} ms` }),
        h('td', { text: `${f3(q.total_tt)} s` }),
        h('td', { class: 'ks-name', text: q.method }),
        h('td', { class: 'ks-name', text: q.path }),
        h('td', { class: 'ks-name', text: q.file }),
      ),
    );
    return h(
      'details',
      { class: 'ks-callgraph-requests', open: true },
      h('summary', { text: `${r.length} request profiles, slowest first by the time in their names` }),
      h(
        'div',
        { class: 'ks-functable-main' },
        h(
          'table',
          { class: 'ks-table' },
          h('thead', {}, h('tr', {}, ...['elapsed', 'profiled', 'method', 'path', 'file'].map((t) => h('th', { class: t === 'elapsed' || t === 'profiled' ? '' : 'ks-name', text: t })))),
          h('tbody', {}, ...rows),
        ),
      ),
    );
  }

  private render(): void {
    // Re-sorting or picking a row keeps the table where the user was.
    const scrolled = this.main.scrollTop;
    clear(this.main);
    const head = (label: string, key: SortKey | null, name = false): HTMLElement =>
      h('th', {
        class: name ? 'ks-name' : key === this.sortBy ? 'ks-sorted' : '',
        text: label + (key !== null && key === this.sortBy ? ' ▼' : ''),
        onclick: key === null ? undefined : () => { this.sortBy = key; this.render(); },
      });
    const rows = sortedFunctions(this.cg, this.sortBy)
      .slice(0, MAX_ROWS)
      .map((i) => {
        const f = this.cg.functions[i];
        return h(
          'tr',
          { class: i === this.selected ? 'ks-selected' : '', 'data-func': String(i), onclick: () => this.select(i) },
          h('td', { text: ncalls(f.nc, f.cc) }),
          h('td', { text: f3(f.tt) }),
          h('td', { text: f.nc ? f3(f.tt / f.nc) : '' }),
          h('td', { text: f3(f.ct) }),
          h('td', { text: f.cc ? f3(f.ct / f.cc) : '' }),
          h('td', { class: 'ks-name', text: f.label }),
        );
      });
    this.main.append(
      h(
        'table',
        { class: 'ks-table ks-callgraph-table' },
        h('thead', {}, h('tr', {}, head('ncalls', 'nc'), head('tottime', 'tt'), head('percall', null), head('cumtime', 'ct'), head('percall', null), head('filename:lineno(function)', null, true))),
        h('tbody', {}, ...rows),
      ),
    );
    this.main.scrollTop = scrolled;
    this.renderSide();
  }

  private select(i: number): void {
    this.selected = i;
    this.onPick(`^${regexEscape(this.cg.functions[i].label)}$`);
    this.render();
  }

  private renderSide(): void {
    clear(this.side);
    if (this.selected === null) return;
    const f = this.cg.functions[this.selected];
    const edges = (title: string, list: { f: number; e: CallEdgeJson }[]): HTMLElement[] => {
      const sorted = [...list].sort((a, b) => b.e.ct - a.e.ct);
      return [
        h('h3', { text: title }),
        h(
          'table',
          { class: 'ks-table' },
          h('thead', {}, h('tr', {}, h('th', { text: 'ncalls' }), h('th', { text: 'tottime' }), h('th', { text: 'cumtime' }), h('th', { class: 'ks-name', text: 'function' }))),
          h(
            'tbody',
            {},
            ...sorted.map(({ f: g, e }) =>
              h(
                'tr',
                { onclick: () => this.select(g) },
                h('td', { text: e.timed ? ncalls(e.nc, e.cc) : String(e.nc) }),
                h('td', { text: e.timed ? f3(e.tt) : '' }),
                h('td', { text: e.timed ? f3(e.ct) : '' }),
                h('td', { class: 'ks-name', text: this.cg.functions[g]?.label ?? '?' }),
              ),
            ),
          ),
        ),
      ];
    };
    this.side.append(
      h('h3', { class: 'ks-callgraph-selected', text: f.label }),
      ...edges('called by', f.callers.map((e) => ({ f: e.caller, e }))),
      ...edges('calls', this.callees[this.selected] ?? []),
    );
  }
}
