/**
 * Functions by self and total weight for a FlameGraph's current tree, with
 * the callers and callees of the selected function. Selecting a row
 * highlights the function in the graph; "Focus" merges all its paths.
 */
import { h, clear } from '../common/dom';
import { fmtPct, fmtWeight } from '../common/format';
import { FlameGraph } from './flamegraph';
import { funcStats, FuncStats } from './tree';

const MAX_ROWS = 300;

/** Escapes a string for use as a literal inside a RegExp. */
export function regexEscape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Hooks a page gives the table. */
export interface FunctionTableHooks {
  /** The selected function changed (a row, a frame click, a link). */
  onSelect?: (name: string | null) => void;
  /** "Sandwich" was pressed for a function; without this hook there is no button. */
  onSandwich?: (name: string) => void;
}

/** The function table bound to a flame graph. */
export class FunctionTable {
  readonly root: HTMLElement;
  private sortBy: 'self' | 'total' = 'self';
  private selected: number | null = null;
  private selectedName: string | null = null;
  private main: HTMLElement;
  private side: HTMLElement;
  /** Stats of the whole tree, kept across zooms (the costly case at 1M nodes). */
  private rootStats: { tree: unknown; stats: FuncStats; sorted: Map<string, number[]> } | null = null;
  private pending = 0;

  constructor(container: HTMLElement, private readonly graph: FlameGraph, private readonly hooks: FunctionTableHooks = {}) {
    this.main = h('div', { class: 'ks-functable-main' });
    this.side = h('div', { class: 'ks-functable-side' });
    this.root = h('div', { class: 'ks-functable' }, this.main, this.side);
    container.append(this.root);
    graph.on('rebuild', () => {
      // Function ids change with the tree: re-find the selection by name.
      const t = graph.tree;
      this.selected = this.selectedName === null ? null : t.funcs.name.indexOf(this.selectedName);
      if (this.selected !== null && this.selected < 0) this.selected = null;
      this.render();
    });
    // After a zoom the graph paints first; the table follows a frame later.
    graph.on('zoom', () => this.renderSoon());
    graph.on('select', (s) => this.select(s.func));
    this.render();
  }

  /** Selects a function (tree func id): shows callers/callees, highlights it. */
  select(func: number | null, highlight = false): void {
    this.selected = func;
    this.selectedName = func === null ? null : this.graph.tree.funcs.name[func];
    if (highlight && this.selectedName !== null) this.graph.search(`^${regexEscape(this.selectedName)}$`);
    this.render();
    this.hooks.onSelect?.(this.selectedName);
  }

  /** Selects a function by name (a link); false when the tree has none. */
  selectName(name: string | null): boolean {
    if (name === null) {
      this.select(null);
      return true;
    }
    const f = this.graph.tree.funcs.name.indexOf(name);
    if (f < 0) return false;
    this.select(f);
    return true;
  }

  /** The selected function's name, or null. */
  get selectedFunction(): string | null {
    return this.selectedName;
  }

  private renderSoon(): void {
    if (this.pending) return;
    this.pending = requestAnimationFrame(() =>
      setTimeout(() => {
        this.pending = 0;
        this.render();
      }, 0),
    );
  }

  private render(): void {
    // Counted on the exact tree: a time order drawn folded has boxes that
    // hold their callees' samples (see FlameGraph.exactView).
    const { tree: t, node: zoom } = this.graph.exactView();
    const unit = this.graph.profile?.unit ?? 'samples';
    let st: FuncStats;
    if (zoom !== 0) st = funcStats(t, zoom);
    else if (this.rootStats && this.rootStats.tree === t) st = this.rootStats.stats;
    else {
      st = funcStats(t, 0);
      this.rootStats = { tree: t, stats: st, sorted: new Map() };
    }
    const whole = t.total[zoom] || 1;
    const cache = zoom === 0 && this.rootStats && this.rootStats.tree === t ? this.rootStats.sorted : null;
    let ids = cache?.get(this.sortBy);
    if (!ids) {
      ids = [];
      for (let f = 0; f < st.total.length; f++) {
        const k = t.funcs.kind[f];
        if (st.total[f] > 0 && k !== 'root' && k !== 'process' && k !== 'thread') ids.push(f);
      }
      const key = this.sortBy === 'self' ? st.self : st.total;
      const other = this.sortBy === 'self' ? st.total : st.self;
      ids.sort((a, b) => key[b] - key[a] || other[b] - other[a]);
      cache?.set(this.sortBy, ids);
    }

    clear(this.main);
    const th = (label: string, col: 'self' | 'total' | null): HTMLElement => {
      const el = h('th', { text: col && col === this.sortBy ? `${label} ▾` : label, class: col ? '' : 'ks-name' });
      if (col) {
        el.title = `sort by ${label}`;
        el.addEventListener('click', () => {
          this.sortBy = col;
          this.render();
        });
      }
      return el;
    };
    const tbody = h('tbody');
    for (const f of ids.slice(0, MAX_ROWS)) {
      const tr = h('tr', { 'data-func': f },
        h('td', { text: fmtWeight(st.self[f], unit) }),
        h('td', { text: fmtPct(st.self[f], whole) }),
        h('td', { text: fmtWeight(st.total[f], unit) }),
        h('td', { text: fmtPct(st.total[f], whole) }),
        h('td', { class: 'ks-name', text: t.funcs.name[f], title: t.funcs.module[f] }),
      );
      if (f === this.selected) tr.classList.add('ks-selected');
      tr.addEventListener('click', () => this.select(f, true));
      tbody.append(tr);
    }
    const table = h('table', { class: 'ks-table ks-functable-table' },
      h('thead', {}, h('tr', {}, th('self', 'self'), th('self %', null), th('total', 'total'), th('total %', null), th('function', null))),
      tbody,
    );
    table.querySelectorAll('thead th')[1].className = '';
    table.querySelectorAll('thead th')[3].className = '';
    this.main.append(table);
    if (ids.length > MAX_ROWS) this.main.append(h('div', { class: 'ks-muted', text: `${ids.length - MAX_ROWS} more functions not shown` }));
    this.renderSide(st.total);
  }

  private renderSide(totals: Float64Array): void {
    clear(this.side);
    const t = this.graph.exactView(0).tree;
    const f = this.selected;
    if (f === null || f >= t.funcs.name.length) {
      this.side.append(h('p', { class: 'ks-muted', text: 'Select a function (a row, or click a frame) to see its callers and callees.' }));
      return;
    }
    const unit = this.graph.profile?.unit ?? 'samples';
    const callers = new Map<number, number>();
    const callees = new Map<number, number>();
    for (let n = 1; n < t.n; n++) {
      if (t.func[n] !== f) continue;
      const p = t.parent[n];
      if (p > 0) callers.set(t.func[p], (callers.get(t.func[p]) ?? 0) + t.total[n]);
      for (let k = t.childStart[n]; k < t.childStart[n + 1]; k++) {
        const c = t.childList[k];
        callees.set(t.func[c], (callees.get(t.func[c]) ?? 0) + t.total[c]);
      }
    }
    const name = t.funcs.name[f];
    const focus = h('button', { type: 'button', text: 'Focus', title: 'show only stacks through this function, merged' });
    focus.addEventListener('click', () => this.graph.setFocus(name));
    let sandwich: HTMLButtonElement | null = null;
    const onSandwich = this.hooks.onSandwich;
    if (onSandwich) {
      sandwich = h('button', { type: 'button', class: 'ks-btn-sandwich', text: 'Sandwich', title: 'callers and callees of this function as two flame graphs (s)' });
      sandwich.addEventListener('click', () => onSandwich(name));
    }
    this.side.append(
      h('h3', { class: 'ks-functable-selected' }, name, ' ', focus),
      h('div', { class: 'ks-muted', text: `total ${fmtWeight(totals[f] ?? 0, unit)}${t.funcs.module[f] ? ' · ' + t.funcs.module[f] : ''}` }),
    );
    // Its own line, apart from the heading's Focus button.
    if (sandwich) this.side.append(h('div', { class: 'ks-functable-actions' }, sandwich));
    const list = (title: string, m: Map<number, number>, cls: string): void => {
      const rows = [...m].sort((a, b) => b[1] - a[1]).slice(0, 50);
      const tbody = h('tbody');
      for (const [g, w] of rows) {
        const tr = h('tr', {}, h('td', { text: fmtWeight(w, unit) }), h('td', { class: 'ks-name', text: t.funcs.name[g] }));
        tr.addEventListener('click', () => this.select(g, true));
        tbody.append(tr);
      }
      if (!rows.length) tbody.append(h('tr', {}, h('td', { class: 'ks-muted ks-name', text: 'none' })));
      this.side.append(h('h3', { text: title }), h('table', { class: `ks-table ${cls}` }, tbody));
    };
    list('Callers', callers, 'ks-callers');
    list('Callees', callees, 'ks-callees');
  }
}
