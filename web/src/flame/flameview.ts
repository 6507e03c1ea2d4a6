/**
 * Wires the flame page's views together: the panel switch (flame graph or
 * sandwich), the frame menu, the `?` help and the page keys, and the URL:
 * every change is written to the location hash (viewstate.ts), and opening
 * or reloading a link applies it. State lives in viewstate.ts; this module
 * only moves it between the components and the address bar.
 */
import { h } from '../common/dom';
import { FlameGraph } from './flamegraph';
import { FunctionTable, FunctionTableHooks } from './functable';
import { FlameAction, keyAction } from './keys';
import { copyText, FrameMenu, HelpOverlay, MenuItem, toast } from './popups';
import { Profile } from './profile';
import { SandwichView } from './sandwich';
import { threadSet } from './threadfilter';
import { decodeView, encodeView, fitView, FlameView, nextMode, ViewCaps } from './viewstate';

/** What the page hands over once its profile is loaded. */
export interface FlameViewParts {
  profile: Profile;
  graph: FlameGraph;
  /** The main graph's section: hidden while the sandwich shows. */
  graphBox: HTMLElement;
  table: FunctionTable;
  /** The time range inputs (seconds), when the profile has times. */
  range: { from: HTMLInputElement; to: HTMLInputElement } | null;
  threadSelect: HTMLSelectElement | null;
  /** The page's own preset view (from `keisoku flame --search` etc.). */
  base: FlameView;
}

/** The page-level view controller. */
export class FlameViews {
  private readonly menu = new FrameMenu();
  private readonly help = new HelpOverlay();
  private sandwich: SandwichView | null = null;
  private readonly sandwichBox: HTMLElement;
  private readonly tabs: { flame: HTMLButtonElement; sandwich: HTMLButtonElement };
  private readonly notice: HTMLElement;
  private panel: 'flame' | 'sandwich' = 'flame';
  private applying = false;
  private readonly caps: ViewCaps;
  /** What the last write put in the hash (to tell our writes from the user's). */
  private written = '';
  /** The view as the page opens: the page's preset with the graph's own default split. */
  private readonly base: FlameView;

  /** Hooks to give the FunctionTable this controller is bound to. */
  static tableHooks(get: () => FlameViews | null): FunctionTableHooks {
    return {
      onSelect: (name) => get()?.onTableSelect(name),
      onSandwich: (name) => get()?.showSandwich(name),
    };
  }

  constructor(private readonly p: FlameViewParts) {
    const { graph, graphBox, profile } = p;
    // A profile of several processes opens split by process: a link
    // without `split=` means that, and `split=merge` says otherwise.
    this.base = { ...p.base, split: graph.viewState().split };
    this.caps = { timeOrder: graph.timeOrderUnavailable, threads: !!profile.sampleThread && profile.threads.length > 0, time: profile.sampleTime !== null };
    const tab = (label: string, panel: 'flame' | 'sandwich', title: string): HTMLButtonElement => {
      const b = h('button', { type: 'button', role: 'tab', class: `ks-tab ks-tab-${panel}`, text: label, title });
      b.addEventListener('click', () => (panel === 'flame' ? this.showFlame() : this.showSandwich(this.p.table.selectedFunction)));
      return b;
    };
    this.tabs = {
      flame: tab('Flame graph', 'flame', 'the whole profile'),
      sandwich: tab('Sandwich', 'sandwich', 'callers and callees of the selected function (s)'),
    };
    this.notice = h('div', { class: 'ks-view-notice', role: 'status' });
    this.notice.hidden = true;
    graphBox.before(h('div', { class: 'ks-tabs', role: 'tablist' }, this.tabs.flame, this.tabs.sandwich), this.notice);
    this.sandwichBox = h('section', { class: 'ks-sandwich-box' });
    this.sandwichBox.hidden = true;
    graphBox.after(this.sandwichBox);
    this.renderTabs();

    graph.on('view', () => {
      this.refreshSandwich();
      this.write();
    });
    graph.on('context', (c) => this.openMenu(graph, c.name, c.node, c.clientX, c.clientY, true));
    p.threadSelect?.addEventListener('change', () => {
      this.refreshSandwich();
      this.write();
    });
    for (const el of p.range ? [p.range.from, p.range.to] : []) {
      el.addEventListener('change', () => {
        this.refreshSandwich();
        this.write();
      });
    }
    // Capture: runs before the shared `/`/Esc handler, so Esc closes a
    // popup without also resetting the graph.
    document.addEventListener('keydown', (ev) => this.onKey(ev), true);
    window.addEventListener('hashchange', () => {
      if (location.hash !== this.written) this.applyHash(location.hash);
    });
  }

  /** Applies the link the page was opened with. */
  start(): void {
    this.applyHash(location.hash);
  }

  /** The whole view as it is now. */
  current(): FlameView {
    const g = this.p.graph.viewState();
    const r = this.p.range;
    const sec = (el: HTMLInputElement | undefined): number | null => (el && el.value !== '' && Number.isFinite(Number(el.value)) ? Number(el.value) : null);
    return {
      panel: this.panel,
      mode: g.mode,
      zoom: g.zoom,
      search: g.search,
      focus: g.focus,
      hide: g.hide,
      invert: g.invert,
      icicle: g.icicle,
      split: g.split,
      idle: g.idle,
      threads: this.p.threadSelect ? this.p.threadSelect.value : 'all',
      from: sec(r?.from),
      to: sec(r?.to),
      fn: this.panel === 'sandwich' && this.sandwich ? this.sandwich.func : this.p.table.selectedFunction,
    };
  }

  /** Writes the view to the location hash (replacing, not adding history). */
  write(): void {
    if (this.applying) return;
    const hash = encodeView(this.current(), this.base);
    if (hash === this.written && hash === location.hash) return;
    this.written = hash;
    history.replaceState(history.state, '', hash === '' ? location.pathname + location.search : hash);
  }

  private applyHash(hash: string): void {
    const decoded = decodeView(hash, this.base);
    const fitted = fitView(decoded.view, this.caps);
    const ignored = [...decoded.ignored, ...fitted.ignored];
    const v = fitted.view;
    const { graph, table, threadSelect, range, profile } = this.p;
    this.applying = true;
    try {
      let threads: ReadonlySet<number> | null = null;
      if (threadSelect) {
        const set = threadSet(profile, v.threads);
        if (set === undefined) ignored.push(`threads=${v.threads}: no such process or thread in this profile`);
        else {
          threads = set;
          // A one-thread process has no "p:" entry: select its thread.
          const value = [...threadSelect.options].some((o) => o.value === v.threads) ? v.threads : set && set.size === 1 ? `t:${[...set][0]}` : 'all';
          threadSelect.value = value;
        }
      }
      if (range) {
        range.from.value = v.from === null ? '' : String(v.from);
        range.to.value = v.to === null ? '' : String(v.to);
      }
      const fromMs = v.from === null ? null : v.from * 1000;
      const toMs = v.to === null ? null : v.to * 1000;
      try {
        graph.applyView({ mode: v.mode, split: v.split, invert: v.invert, idle: v.idle, hide: v.hide, focus: v.focus, icicle: v.icicle, search: v.search, zoom: v.zoom }, { threads, fromMs, toMs });
      } catch (e) {
        ignored.push(String(e instanceof Error ? e.message : e));
      }
      const z = graph.viewState().zoom;
      if (v.zoom.length && z.length < v.zoom.length) ignored.push(`zoom: ${v.zoom.slice(z.length).join(' › ')} is not in this view`);
      if (v.fn !== table.selectedFunction) {
        if (v.fn !== null && !table.selectName(v.fn)) ignored.push(`fn=${v.fn}: no such function in this view`);
        if (v.fn === null) table.selectName(null);
      }
      if (v.panel === 'sandwich' && v.fn !== null && table.selectedFunction === v.fn) this.showSandwich(v.fn);
      else this.showFlame();
    } finally {
      this.applying = false;
    }
    this.notice.textContent = ignored.length ? `Not applied from the link: ${ignored.join('; ')}` : '';
    this.notice.hidden = ignored.length === 0;
    this.write();
  }

  /** A row or frame selected a function: the sandwich follows it (as speedscope's). */
  onTableSelect(name: string | null): void {
    if (this.applying) return;
    if (this.panel === 'sandwich' && name !== null && this.sandwich && name !== this.sandwich.func) this.showSandwich(name);
    else this.write();
  }

  /** Shows the sandwich of `name` (null: the selected function, else a hint). */
  showSandwich(name: string | null): void {
    if (name === null) {
      toast('select a function first (a table row, or a frame), or press s over a frame');
      return;
    }
    if (!this.sandwich) {
      this.sandwich = new SandwichView(this.sandwichBox, this.p.profile, name);
      for (const g of [this.sandwich.callers, this.sandwich.callees]) {
        const graph = g;
        graph.on('context', (c) => this.openMenu(graph, c.name, c.node, c.clientX, c.clientY, false));
      }
    }
    this.panel = 'sandwich';
    this.p.graphBox.hidden = true;
    this.sandwichBox.hidden = false;
    this.renderTabs();
    this.sandwich.show(name, this.p.graph.viewState(), this.filters());
    // After show: the table's select hook then finds the sandwich current.
    if (this.p.table.selectedFunction !== name) this.p.table.selectName(name);
    this.write();
  }

  /** Back to the flame graph. */
  showFlame(): void {
    this.panel = 'flame';
    this.p.graphBox.hidden = false;
    this.sandwichBox.hidden = true;
    this.renderTabs();
    this.write();
  }

  private renderTabs(): void {
    this.tabs.flame.setAttribute('aria-selected', String(this.panel === 'flame'));
    this.tabs.sandwich.setAttribute('aria-selected', String(this.panel === 'sandwich'));
  }

  private filters(): { threads: ReadonlySet<number> | null; fromMs: number | null; toMs: number | null } {
    const { threadSelect, range, profile } = this.p;
    const sec = (el: HTMLInputElement): number | null => (el.value !== '' && Number.isFinite(Number(el.value)) ? Number(el.value) * 1000 : null);
    return {
      threads: threadSelect ? threadSet(profile, threadSelect.value) ?? null : null,
      fromMs: range ? sec(range.from) : null,
      toMs: range ? sec(range.to) : null,
    };
  }

  private refreshSandwich(): void {
    if (this.panel !== 'sandwich' || !this.sandwich || this.sandwich.func === null || this.applying) return;
    this.sandwich.show(this.sandwich.func, this.p.graph.viewState(), this.filters());
  }

  private openMenu(graph: FlameGraph, name: string, node: number, x: number, y: number, main: boolean): void {
    const items: MenuItem[] = [
      { label: 'Copy name', key: 'c', run: () => void this.copy(name) },
      { label: 'Sandwich view of this function', key: 's', run: () => this.showSandwich(name) },
    ];
    if (main) {
      items.push({ label: 'Focus on this function', key: 'shift+click', run: () => graph.setFocus(name) });
      items.push({ label: 'Zoom to this frame', key: 'click', run: () => graph.zoomTo(node) });
    }
    this.menu.open(name, items, x, y);
  }

  private async copy(name: string): Promise<void> {
    const ok = await copyText(name);
    toast(ok ? `copied: ${name}` : `could not copy (the browser refused): ${name}`);
  }

  /** The function a key acts on: under the pointer, else the zoomed frame (c) or the selection. */
  private target(forCopy: boolean): string | null {
    const graphs = [this.p.graph, ...(this.sandwich && this.panel === 'sandwich' ? [this.sandwich.callers, this.sandwich.callees] : [])];
    for (const g of graphs) {
      const n = g.hoveredNode();
      if (n > 0) return g.tree.name(n);
    }
    if (forCopy && this.panel === 'flame') {
      const zoom = this.p.graph.stats().zoomNode;
      if (zoom > 0) return this.p.graph.tree.name(zoom);
    }
    return this.p.table.selectedFunction;
  }

  private onKey(ev: KeyboardEvent): void {
    const el = ev.target as HTMLElement | null;
    const typing = !!el && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT');
    const action: FlameAction | null = keyAction(ev, typing);
    if (action === null) return;
    if (action === 'reset') {
      if (this.help.isOpen || this.menu.isOpen) {
        this.help.close();
        this.menu.close();
        ev.stopImmediatePropagation();
        ev.preventDefault();
      }
      return;
    }
    // `/` stays with the shared handler (installKeys).
    if (action === 'search') return;
    ev.preventDefault();
    const g = this.p.graph;
    switch (action) {
      case 'help':
        this.menu.close();
        this.help.toggle();
        break;
      case 'copy': {
        const name = this.target(true);
        if (name === null) toast('nothing to copy: point at a frame first');
        else void this.copy(name);
        break;
      }
      case 'sandwich':
        if (this.panel === 'sandwich' && this.target(false) === this.sandwich?.func) this.showFlame();
        else this.showSandwich(this.target(false));
        break;
      case 'mode':
        try {
          g.setMode(nextMode(g.layoutMode, this.caps));
          toast(`mode: ${g.layoutMode}`);
        } catch (e) {
          toast(String(e instanceof Error ? e.message : e));
        }
        break;
      case 'back':
        g.back();
        break;
      case 'icicle':
        g.setIcicle(!g.viewState().icicle);
        break;
    }
  }
}
