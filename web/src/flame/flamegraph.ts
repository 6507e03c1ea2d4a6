/**
 * The canvas flame graph: zoom with breadcrumbs and back, tooltip, regex
 * search with matched shares, icicle/invert, focus, hide, split by process
 * or thread, time range, legend. Reused by the flame, diff and scope pages
 * and by the run report.
 *
 *   const fg = new FlameGraph(el, profile, { icicle: false });
 *   fg.setRange(1000, 2000); fg.search('^ngx_'); fg.on('zoom', ...);
 */
import { Emitter } from '../common/events';
import { h, clear } from '../common/dom';
import { frameColor, diffColor, kindSwatch, KIND_LABELS } from '../common/colors';
import { fmtPct, fmtWeight, fmtCount, fmtShare, fmtSignedPct } from '../common/format';
import { isDark, onThemeChange, cssVar } from '../common/theme';
import { Profile } from './profile';
import { buildTree, CallTree, defaultSplit, matchShare, MatchShare, SplitMode, TreeOptions } from './tree';
import { DiffMode, DiffTree, diffTrees } from './difftree';
import { nextTask } from './compact';
import { buildTimeOrderTree, timeOrderUnavailable } from './timeorder';
import { FLAME_MODES, FlameMode, MODE_LABELS } from './viewstate';
import { toast } from './popups';
import './flame.css';

/** Two sides of a differential flame graph. */
export interface DiffSource {
  before: Profile;
  after: Profile;
  mode: DiffMode;
  /** Optional time ranges per side (heat-map comparisons of one profile). */
  beforeRange?: [number, number] | null;
  afterRange?: [number, number] | null;
}

/**
 * A profile still being read (a compact page's columns), with a coarse tree
 * to draw meanwhile. Filters set before it loads apply once it has.
 */
export interface PendingProfile {
  preview: CallTree;
  unit: string;
  /** The profile has per-sample threads (the split menu is usable). */
  threads: boolean;
  /** Why the profile cannot be shown in time order (null: it can); default: it cannot. */
  timeOrder?: string | null;
  load: Promise<Profile>;
}

function isPending(s: Profile | DiffSource | PendingProfile): s is PendingProfile {
  return 'load' in s && 'preview' in s;
}

/** Construction options. */
export interface FlameOptions {
  /** Root at the top (icicle) instead of the bottom. */
  icicle?: boolean;
  /** Drop samples whose stack contains an idle frame. */
  hideIdle?: boolean;
  /** Initial search regex. */
  search?: string;
  split?: SplitMode;
  /** Show the toolbar (search, toggles); default true. */
  toolbar?: boolean;
  /** Show the legend; default true. */
  legend?: boolean;
  /** Show the toolbar's idle checkbox; default true (a page with its own idle switch hides it). */
  idleToggle?: boolean;
  /** Max height of the scrolling canvas area in CSS pixels; default 70vh. */
  maxHeight?: string;
  /** Show the mode menu (merged, left heavy, time order); default false. */
  modes?: boolean;
  /** Shift+click focuses on the function; default true. */
  shiftFocus?: boolean;
  /** Initial focus (as setFocus), built in the first tree rather than after it (for toolbar-less graphs: the focus chip does not show it). */
  focus?: string | null;
  /** Initial callers view (as setCallers), likewise. */
  callers?: string | null;
}

/** Settings of a graph that a link restores (see viewstate.ts). */
export interface GraphView {
  mode: FlameMode;
  zoom: string[];
  search: string;
  focus: string | null;
  hide: string;
  invert: boolean;
  icicle: boolean;
  split: SplitMode;
  idle: boolean;
}

/** What the status line reports; also available to tests via stats(). */
export interface FlameStats {
  /** Weight of the whole (filtered) tree. */
  total: number;
  /** Weight of the zoomed root. */
  zoomTotal: number;
  /** Samples in the tree (per-sample profiles) or null. */
  samples: number | null;
  /** Outermost-match weight: whole tree and zoomed view; null without search. */
  matched: MatchShare | null;
  zoomNode: number;
  zoomPath: string[];
}

/** Events a FlameGraph emits. */
export interface FlameEvents {
  /** A frame was clicked: its function. */
  select: { func: number; name: string; module: string };
  zoom: { node: number; path: string[] };
  search: FlameStats;
  /** After each full redraw, with its duration in ms. */
  paint: { ms: number; frames: number };
  /** After the tree was rebuilt (filters changed). */
  rebuild: { tree: CallTree };
  /** After any change of what a link restores (zoom, search, mode, filters). */
  view: GraphView;
  /** Right click on a frame: where, for a menu. */
  context: { node: number; func: number; name: string; clientX: number; clientY: number };
}

const ROW = 18;
/** Above this many stack nodes the first paint uses a preview tree. */
const PREVIEW_NODES = 300_000;
const MIN_PX = 0.5;
const FONT = '12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace';
let firstPaintMarked = false;

/**
 * Marks the first draw and, a frame later, the first frame shown with it.
 * The detail says what was drawn: tests check that a compact page's first
 * paint is its preview, drawn while the document was still loading.
 */
function markFirstPaint(nodes: number): void {
  if (firstPaintMarked) return;
  firstPaintMarked = true;
  performance.mark('keisoku:first-paint', { detail: { readyState: document.readyState, nodes } });
  requestAnimationFrame(() => performance.mark('keisoku:first-frame'));
}

/** How a preview tree is grouped: by process when its root's children are process groups. */
function previewSplit(t: CallTree): SplitMode {
  const k = t.childStart[0] < t.childStart[1] ? t.funcs.kind[t.func[t.childList[t.childStart[0]]]] : '';
  return k === 'process' ? 'process' : 'merge';
}

/** A flame graph component bound to one container element. */
export class FlameGraph extends Emitter<FlameEvents> {
  readonly root: HTMLElement;
  /** Null while a pending profile loads. */
  private source: Profile | DiffSource | null;
  private readonly pendingUnit: string;
  private treeOpts: TreeOptions;
  private _tree!: CallTree;
  private diff: DiffTree | null = null;
  private zoomNode = 0;
  private history: string[][] = [];
  private searchRe: RegExp | null = null;
  private matchFuncs: Uint8Array | null = null;
  private matched: MatchShare | null = null;
  private icicle: boolean;
  private colorCache: (string | undefined)[] = [];
  private dark = isDark();
  private hover = -1;
  /** exactView's last answers: the whole view and the last zoomed node. */
  private exactWhole: { of: CallTree; node: number; view: { tree: CallTree; node: number } } | null = null;
  private exactCache: { of: CallTree; node: number; view: { tree: CallTree; node: number } } | null = null;
  private canvas: HTMLCanvasElement;
  private scroller: HTMLElement;
  private tooltip: HTMLElement;
  private crumbs: HTMLElement;
  private status: HTMLElement;
  private legendEl: HTMLElement;
  private searchInput: HTMLInputElement | null = null;
  private hideInput: HTMLInputElement | null = null;
  private splitSelect: HTMLSelectElement | null = null;
  private focusChip: HTMLElement | null = null;
  private modeSelect: HTMLSelectElement | null = null;
  private invertBtn: HTMLButtonElement | null = null;
  private idleInput: HTMLInputElement | null = null;
  private mode: FlameMode = 'merged';
  private timeOrderWhy: string | null;
  private readonly shiftFocus: boolean;
  /** Suppresses 'view' events while several settings are applied at once. */
  private batching = false;
  private charW = 7.2;
  private widthPx = 0;
  private raf = 0;
  private resizeObserver: ResizeObserver;
  /**
   * The root row still has to be scrolled into view: a graph built before
   * its container joins the page has no scroll height yet, and would open
   * at its deepest frames, away from the root (issue 13).
   */
  private rootScrollPending = true;

  constructor(container: HTMLElement, source: Profile | DiffSource | PendingProfile, options: FlameOptions = {}) {
    super();
    const pending = isPending(source) ? source : null;
    this.source = pending ? null : (source as Profile | DiffSource);
    this.pendingUnit = pending ? pending.unit : 'samples';
    this.icicle = !!options.icicle;
    // A profile of several processes opens with one root per process, as
    // its SVG and folded outputs have them; a diff stays merged (its two
    // sides' process ids differ, so groups would never line up).
    const split = options.split ?? (pending ? previewSplit(pending.preview) : source instanceof Profile ? defaultSplit(source) : 'merge');
    this.treeOpts = { split, hideIdle: !!options.hideIdle, focus: options.focus ?? null, callers: options.callers ?? null };
    this.shiftFocus = options.shiftFocus !== false;
    const src0 = this.source;
    this.timeOrderWhy = pending ? (pending.timeOrder === undefined ? 'no sample timestamps' : pending.timeOrder) : src0 instanceof Profile ? timeOrderUnavailable(src0) : 'a differential graph has no time order';
    this.root = h('div', { class: 'ks-flame' });
    this.status = h('span', { class: 'ks-flame-status', 'aria-live': 'polite' });
    this.crumbs = h('nav', { class: 'ks-flame-crumbs', 'aria-label': 'zoom path' });
    this.canvas = h('canvas', { class: 'ks-flame-canvas', role: 'img', 'aria-label': 'flame graph' });
    this.scroller = h('div', { class: 'ks-flame-scroll' }, this.canvas);
    this.scroller.style.maxHeight = options.maxHeight ?? '70vh';
    this.tooltip = h('div', { class: 'ks-flame-tip', role: 'tooltip' });
    this.legendEl = h('div', { class: 'ks-flame-legend' });
    if (options.toolbar !== false) this.root.append(this.buildToolbar(options.idleToggle !== false, pending ? pending.threads : this.hasThreads(), !!options.modes && !(src0 !== null && !(src0 instanceof Profile))));
    this.root.append(h('div', { class: 'ks-flame-statusbar' }, this.status), this.crumbs, this.scroller, this.tooltip);
    if (options.legend !== false) this.root.append(this.legendEl);
    container.append(this.root);

    this.canvas.addEventListener('mousemove', (e) => this.onMove(e));
    this.canvas.addEventListener('mouseleave', () => this.setHover(-1, null));
    this.canvas.addEventListener('click', (e) => this.onClick(e));
    this.canvas.addEventListener('contextmenu', (e) => this.onContext(e));
    this.resizeObserver = new ResizeObserver(() => this.scheduleDraw());
    this.resizeObserver.observe(this.scroller);
    onThemeChange(() => {
      this.dark = isDark();
      this.colorCache = [];
      this.renderLegend();
      this.scheduleDraw();
    });
    // Large profiles paint a preview first (only frames wide enough to
    // see): given by the page while its columns load, or cut from the
    // profile; the full tree follows in a later task.
    // (A focused or callers tree holds only the stacks through one
    // function: built whole at once, no preview.)
    const big = source instanceof Profile && source.nodeCount > PREVIEW_NODES && !options.focus && !options.callers;
    if (pending) {
      this._tree = pending.preview;
      this.renderLegend();
    } else this.rebuild(big ? 1 / (4 * Math.max(800, container.clientWidth || 1366)) : 0);
    if (!firstPaintMarked) performance.mark('keisoku:tree-built');
    this.renderStatus();
    this.renderCrumbs();
    if (options.search && !big && !pending) this.search(options.search);
    this.draw();
    this.showRoot();
    if (pending) {
      // The full tree is built in its own task, after the last column.
      this.ready = (async () => {
        const profile = await pending.load;
        await nextTask();
        this.source = profile;
        this.timeOrderWhy = timeOrderUnavailable(profile);
        if (this.splitSelect) this.enableSplit(this.splitSelect, this.hasThreads());
        if (this.modeSelect) this.enableModes(this.modeSelect);
        this.refresh();
        if (options.search) this.search(options.search);
      })();
      // A failed load is the page's to report (it awaits the same promise).
      this.ready.catch(() => undefined);
      return;
    }
    this.ready = new Promise((resolve) => {
      if (!big) return resolve();
      setTimeout(() => {
        this.refresh();
        if (options.search) this.search(options.search);
        resolve();
      }, 0);
    });
  }

  private hasThreads(): boolean {
    const p = this.profile;
    return !!p && !!p.sampleThread && p.threads.length > 0;
  }

  private enableSplit(split: HTMLSelectElement, on: boolean): void {
    split.disabled = !on;
    if (on) split.removeAttribute('title');
    else split.title = 'this profile has no thread information';
  }

  /** Removes the graph from the page and stops observing its size. */
  destroy(): void {
    this.resizeObserver.disconnect();
    if (this.raf) cancelAnimationFrame(this.raf);
    this.root.remove();
  }

  /** Resolves once the full tree is built (large profiles paint a preview first). */
  readonly ready: Promise<void>;

  /** The current call tree (after filters). */
  get tree(): CallTree {
    return this._tree;
  }

  /** True for a differential graph. */
  get isDiff(): boolean {
    return this.diff !== null;
  }

  /** The differential data of a diff graph. */
  get diffTree(): DiffTree | null {
    return this.diff;
  }

  /** The profile of a plain graph (null for a diff). */
  get profile(): Profile | null {
    return this.source instanceof Profile ? this.source : null;
  }

  // ---- public API -------------------------------------------------------

  /** Restricts to samples with fromMs <= time < toMs (null: unbounded). */
  setRange(fromMs: number | null, toMs: number | null): void {
    this.treeOpts.fromMs = fromMs;
    this.treeOpts.toMs = toMs;
    this.refresh();
  }

  /** Keeps only samples of these thread indices (null: all threads). */
  setThreads(threads: ReadonlySet<number> | null): void {
    this.treeOpts.threads = threads;
    this.refresh();
  }

  /** Merges all threads or splits by process or thread. */
  setSplit(mode: SplitMode): void {
    this.treeOpts.split = mode;
    if (this.splitSelect) this.splitSelect.value = mode;
    this.refresh();
  }

  /** Hides frames whose names match (their callees move up). */
  setHide(re: RegExp | null): void {
    this.treeOpts.hide = re;
    if (this.hideInput) {
      this.hideInput.value = re ? re.source : '';
      this.hideInput.classList.remove('ks-invalid');
    }
    this.refresh();
  }

  /** Shows only stacks through `name`, merged at its outermost call. */
  setFocus(name: string | null): void {
    this.treeOpts.focus = name;
    this.history = [];
    this.zoomNode = 0;
    if (this.focusChip) {
      clear(this.focusChip);
      if (name) {
        this.focusChip.append(
          `focus: ${name} `,
          h('button', { class: 'ks-chip-x', title: 'remove focus', 'aria-label': 'remove focus', text: '✕', onclick: () => this.setFocus(null) }),
        );
      }
      this.focusChip.hidden = !name;
    }
    this.refresh(false);
  }

  /** Leaf-first stacks. */
  setInvert(on: boolean): void {
    this.treeOpts.invert = on;
    this.invertBtn?.setAttribute('aria-pressed', String(on));
    this.history = [];
    this.zoomNode = 0;
    this.refresh(false);
  }

  setHideIdle(on: boolean): void {
    this.treeOpts.hideIdle = on;
    if (this.idleInput) this.idleInput.checked = !on;
    this.refresh();
  }

  /** Root at the top (true) or bottom (false). */
  setIcicle(on: boolean): void {
    this.icicle = on;
    this.root.querySelector('.ks-btn-icicle')?.setAttribute('aria-pressed', String(on));
    this.draw();
    this.showRoot();
    this.emitView();
  }

  /** The layout mode in force. */
  get layoutMode(): FlameMode {
    return this.mode;
  }

  /** Why time order is unavailable for this graph's profile, or null. */
  get timeOrderUnavailable(): string | null {
    return this.timeOrderWhy;
  }

  /**
   * Merged by name, left heavy (heaviest first), or time order (samples
   * in the order taken). Time order without timestamps throws with the
   * reason; the menu offers it disabled with the same reason.
   */
  setMode(mode: FlameMode): void {
    if (mode === 'time-order' && this.timeOrderWhy && this.source !== null) throw new Error(`time order: ${this.timeOrderWhy}`);
    const before = this.mode;
    this.mode = mode;
    this.treeOpts.leftHeavy = mode === 'left-heavy';
    if (before !== 'time-order' && mode !== 'time-order' && this.source instanceof Profile && this._tree.order !== 'creation') {
      // Merged <-> left heavy: the same tree in another order, no rebuild
      // (the zoom, search shares and function table all stay valid).
      this._tree.orderChildren(mode === 'left-heavy' ? 'weight' : 'name');
      if (this.modeSelect) this.modeSelect.value = mode;
      this.renderStatus();
      this.draw();
      this.emitView();
      return;
    }
    try {
      this.refresh();
    } catch (e) {
      // Too large a time-ordered tree: the build threw before replacing
      // the tree, so the graph still shows the mode that worked.
      this.mode = before;
      this.treeOpts.leftHeavy = before === 'left-heavy';
      throw e;
    } finally {
      if (this.modeSelect) this.modeSelect.value = this.mode;
    }
  }

  /**
   * Shows the callers of `name` (the upper half of a sandwich): stacks
   * through it, cut at its outermost call, read from it towards the root.
   */
  setCallers(name: string | null): void {
    this.treeOpts.callers = name;
    this.history = [];
    this.zoomNode = 0;
    this.refresh(false);
  }

  /** The node under the pointer, or -1. */
  hoveredNode(): number {
    return this.hover;
  }

  /** Zooms to the deepest node along a path of frame names from the root. */
  zoomToNames(names: string[]): void {
    const t = this._tree;
    let n = 0;
    for (const name of names) {
      // The heaviest child of that name (a name may come from two modules).
      let next = -1;
      for (let k = t.childStart[n]; k < t.childStart[n + 1]; k++) {
        const c = t.childList[k];
        if (t.funcs.name[t.func[c]] === name && t.total[c] > 0 && (next < 0 || t.total[c] > t.total[next])) next = c;
      }
      if (next < 0) break;
      n = next;
    }
    if (n === this.zoomNode) return;
    this.history.push(this.pathKeys(this.zoomNode));
    this.zoomNode = n;
    this.afterZoom();
  }

  /** What a link restores of this graph. */
  viewState(): GraphView {
    const t = this._tree;
    return {
      mode: this.mode,
      zoom: t.path(this.zoomNode).map((n) => t.funcs.name[t.func[n]]),
      search: this.searchInput ? this.searchInput.value : this.searchRe ? this.searchRe.source : '',
      focus: this.treeOpts.focus ?? null,
      hide: this.treeOpts.hide ? this.treeOpts.hide.source : '',
      invert: !!this.treeOpts.invert,
      icicle: this.icicle,
      split: this.treeOpts.split ?? 'merge',
      idle: !this.treeOpts.hideIdle,
    };
  }

  /**
   * Applies several settings with one rebuild (a link being opened).
   * Throws on an invalid regex or an unavailable mode, naming it; what was
   * valid before it stays applied.
   */
  applyView(v: Partial<GraphView>, filters: { threads?: ReadonlySet<number> | null; fromMs?: number | null; toMs?: number | null; callers?: string | null } = {}): void {
    this.batching = true;
    let late: unknown = null;
    // Rebuild only when what the tree is built from changed: a link that
    // matches the page as it opened costs nothing (a million-sample tree
    // takes a second or more to build).
    const before = this.treeKey();
    try {
      if (v.mode !== undefined) {
        if (v.mode === 'time-order' && this.timeOrderWhy) throw new Error(`time order: ${this.timeOrderWhy}`);
        this.mode = v.mode;
        this.treeOpts.leftHeavy = v.mode === 'left-heavy';
        if (this.modeSelect) this.modeSelect.value = v.mode;
      }
      if (v.split !== undefined) {
        this.treeOpts.split = v.split;
        if (this.splitSelect) this.splitSelect.value = v.split;
      }
      if (v.invert !== undefined) {
        this.treeOpts.invert = v.invert;
        this.invertBtn?.setAttribute('aria-pressed', String(v.invert));
      }
      if (v.idle !== undefined) {
        this.treeOpts.hideIdle = !v.idle;
        if (this.idleInput) this.idleInput.checked = v.idle;
      }
      if ('threads' in filters) this.treeOpts.threads = filters.threads;
      if ('fromMs' in filters) this.treeOpts.fromMs = filters.fromMs;
      if ('toMs' in filters) this.treeOpts.toMs = filters.toMs;
      if ('callers' in filters) this.treeOpts.callers = filters.callers;
      if (v.hide !== undefined) {
        this.treeOpts.hide = v.hide ? new RegExp(v.hide) : null;
        if (this.hideInput) this.hideInput.value = v.hide;
      }
      const focusChanged = v.focus !== undefined && v.focus !== (this.treeOpts.focus ?? null);
      const rebuild = (): void => (focusChanged ? this.setFocus(v.focus ?? null) : this.refresh(false));
      try {
        if (focusChanged || this.treeKey() !== before) rebuild();
        else if (v.zoom && v.zoom.length === 0 && this.zoomNode !== 0) {
          this.history = [];
          this.zoomNode = 0;
          this.afterZoom(false);
        }
      } catch (e) {
        if (this.mode !== 'time-order') throw e;
        // Too large in time order: the rest of the view still applies, merged.
        this.mode = 'merged';
        if (this.modeSelect) this.modeSelect.value = 'merged';
        rebuild();
        late = e;
      }
      if (v.icicle !== undefined && v.icicle !== this.icicle) this.setIcicle(v.icicle);
      if (v.search !== undefined && v.search !== this.viewState().search) this.search(v.search === '' ? null : v.search);
      if (v.zoom && v.zoom.length) this.zoomToNames(v.zoom);
    } finally {
      this.batching = false;
    }
    this.emitView();
    if (late) throw late;
  }

  /** Everything the tree is built from, as one comparable string. */
  private treeKey(): string {
    const o = this.treeOpts;
    return JSON.stringify([
      this.mode,
      o.split ?? 'merge',
      !!o.invert,
      !!o.hideIdle,
      o.threads ? [...o.threads].sort((a, b) => a - b) : null,
      o.fromMs ?? null,
      o.toMs ?? null,
      o.callers ?? null,
      o.hide ? o.hide.source : null,
      o.focus ?? null,
    ]);
  }

  private emitView(): void {
    if (!this.batching && this._tree) this.emit('view', this.viewState());
  }

  /**
   * Scrolls the graph's own area so the root row is in view (bottom of a
   * flame graph, top of an icicle). Deferred to the first draw with a laid
   * out scroller when the graph is not on the page yet.
   */
  showRoot(): void {
    if (!this.scroller.isConnected || this.scroller.clientHeight === 0) {
      this.rootScrollPending = true;
      return;
    }
    this.rootScrollPending = false;
    this.scroller.scrollTop = this.icicle ? 0 : this.scroller.scrollHeight;
  }

  /** Whether the root row is inside the visible part of the scroller. */
  rootInView(): boolean {
    const y = this.rowY(0);
    const top = this.scroller.scrollTop;
    return y >= top - 1 && y + ROW <= top + this.scroller.clientHeight + 1;
  }

  /** Highlights frames matching a regex (string is compiled, case-sensitive). */
  search(re: string | RegExp | null): FlameStats {
    let rx: RegExp | null = null;
    if (typeof re === 'string') {
      // `/body/flags` selects flags (e.g. /malloc/i); anything else is the body.
      const lit = /^\/(.+)\/([imsu]*)$/.exec(re);
      if (lit) rx = new RegExp(lit[1], lit[2]);
      else if (re !== '') rx = new RegExp(re);
    } else rx = re;
    this.searchRe = rx;
    if (this.searchInput && typeof re === 'string' && this.searchInput.value !== re) this.searchInput.value = re;
    if (this.searchInput && re === null) this.searchInput.value = '';
    this.computeMatches();
    this.draw();
    const st = this.stats();
    this.emit('search', st);
    this.emitView();
    return st;
  }

  /** Zooms so that `node` spans the full width. */
  zoomTo(node: number): void {
    if (node < 0 || node >= this._tree.n) return;
    if (node === this.zoomNode) return;
    this.history.push(this.pathKeys(this.zoomNode));
    this.zoomNode = node;
    this.afterZoom();
  }

  /** Zooms back to the previous view. */
  back(): void {
    const prev = this.history.pop();
    if (!prev) return;
    this.zoomNode = this.resolvePath(prev);
    this.afterZoom();
  }

  /** Resets zoom and search (Esc). */
  reset(): void {
    this.history = [];
    this.zoomNode = 0;
    this.search(null);
    this.afterZoom();
  }

  /** Focuses the search box (`/`). */
  focusSearch(): void {
    this.searchInput?.focus();
    this.searchInput?.select();
  }

  /**
   * The tree whose counts are exact for `node` (default: the zoomed node)
   * and the node there: the drawn tree itself, except in a time order
   * drawn folded (too many boxes), where it is the merged tree of the
   * node's own samples. Search shares, the function table and its callers
   * and callees read their numbers from here, never from folded boxes.
   */
  exactView(node = this.zoomNode): { tree: CallTree; node: number } {
    const t = this._tree;
    if (!t.exactAt) return { tree: t, node };
    const c = this.exactCache;
    if (c && c.of === t && c.node === node) return c.view;
    const whole = this.exactWhole;
    if (node === 0 && whole && whole.of === t) return whole.view;
    const view = t.exactAt(node);
    if (node === 0) this.exactWhole = { of: t, node, view };
    else this.exactCache = { of: t, node, view };
    return view;
  }

  /** Outermost-match shares of `m`, counted on the exact trees (see exactView). */
  private shareOf(m: Uint8Array): MatchShare {
    const t = this._tree;
    const drawn = matchShare(t, m, this.zoomNode);
    if (!t.exactAt) return drawn;
    const whole = this.exactView(0);
    const zoom = this.exactView();
    return { all: matchShare(whole.tree, m, 0).all, zoom: matchShare(zoom.tree, m, zoom.node).zoom, nodes: drawn.nodes };
  }

  /** Totals and matched shares of the current view. */
  stats(): FlameStats {
    const t = this._tree;
    return {
      total: t.total[0],
      zoomTotal: t.total[this.zoomNode],
      samples: t.sampleCount,
      matched: this.matched,
      zoomNode: this.zoomNode,
      zoomPath: this.pathKeys(this.zoomNode),
    };
  }

  /** Where a node is drawn, in CSS pixels relative to the canvas (null if not drawn). */
  frameRect(node: number): { x: number; y: number; w: number; h: number } | null {
    const t = this._tree;
    if (node < 0 || node >= t.n) return null;
    const z = this.zoomNode;
    let x: number;
    let w: number;
    if (t.isAncestorOrSelf(node, z)) {
      x = 0;
      w = this.widthPx;
    } else if (t.isAncestorOrSelf(z, node)) {
      const scale = this.widthPx / (t.total[z] || 1);
      x = (t.x[node] - t.x[z]) * scale;
      w = t.total[node] * scale;
    } else return null;
    return { x, y: this.rowY(t.depth[node]), w, h: ROW - 1 };
  }

  /** The node drawn at a canvas position (CSS pixels), or -1. */
  nodeAt(px: number, py: number): number {
    const t = this._tree;
    const d = this.icicle ? Math.floor(py / ROW) : t.maxDepth - Math.floor(py / ROW);
    if (d < 0 || d > t.maxDepth || px < 0 || px >= this.widthPx) return -1;
    const z = this.zoomNode;
    const zd = t.depth[z];
    if (d <= zd) {
      let n = z;
      while (t.depth[n] > d) n = t.parent[n];
      return n;
    }
    const scale = this.widthPx / (t.total[z] || 1);
    const xv = t.x[z] + px / scale;
    let n = z;
    while (t.depth[n] < d) {
      let lo = t.childStart[n];
      let hi = t.childStart[n + 1] - 1;
      let found = -1;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        const c = t.childList[mid];
        if (xv < t.x[c]) hi = mid - 1;
        else if (xv >= t.x[c] + t.total[c]) lo = mid + 1;
        else {
          found = c;
          break;
        }
      }
      if (found < 0 || t.total[found] * scale < MIN_PX) return -1;
      n = found;
    }
    return n;
  }

  // ---- building ---------------------------------------------------------

  private refresh(keepZoom = true): void {
    // While a pending profile loads, filters are only recorded: the load
    // rebuilds with them.
    if (this.source === null) {
      if (!keepZoom) this.afterZoom(false);
      return;
    }
    const path = keepZoom ? this.pathKeys(this.zoomNode) : [];
    const hist = keepZoom ? this.history : [];
    this.rebuild();
    this.history = hist;
    this.zoomNode = this.resolvePath(path);
    this.computeMatches();
    this.afterZoom(false);
  }

  private rebuild(previewShare = 0): void {
    const src = this.source;
    if (src === null) return;
    if (src instanceof Profile) {
      this.diff = null;
      if (this.mode === 'time-order' && !this.timeOrderWhy) this._tree = buildTimeOrderTree(src, this.treeOpts);
      else this._tree = buildTree(src, previewShare > 0 ? { ...this.treeOpts, minShare: previewShare } : this.treeOpts);
    } else {
      const side = (p: Profile, r: [number, number] | null | undefined): CallTree =>
        buildTree(p, { ...this.treeOpts, fromMs: r ? r[0] : this.treeOpts.fromMs, toMs: r ? r[1] : this.treeOpts.toMs });
      this.diff = diffTrees(side(src.before, src.beforeRange), side(src.after, src.afterRange), src.mode);
      this._tree = this.diff.tree;
    }
    this.colorCache = [];
    this.renderLegend();
    this.emit('rebuild', { tree: this._tree });
  }

  private pathKeys(node: number): string[] {
    const t = this._tree;
    return t.path(node).map((n) => `${t.funcs.name[t.func[n]]}\u0000${t.funcs.module[t.func[n]]}`);
  }

  /** Finds the node for a key path in the current tree, as deep as it exists. */
  private resolvePath(keys: string[]): number {
    const t = this._tree;
    let n = 0;
    for (const key of keys) {
      let next = -1;
      for (let k = t.childStart[n]; k < t.childStart[n + 1]; k++) {
        const c = t.childList[k];
        if (`${t.funcs.name[t.func[c]]}\u0000${t.funcs.module[t.func[c]]}` === key) {
          next = c;
          break;
        }
      }
      if (next < 0 || t.total[next] <= 0) break;
      n = next;
    }
    return n;
  }

  private computeMatches(): void {
    const t = this._tree;
    if (!this.searchRe) {
      this.matchFuncs = null;
      this.matched = null;
    } else {
      const re = this.searchRe;
      const m = new Uint8Array(t.funcs.name.length);
      for (let f = 0; f < m.length; f++) {
        re.lastIndex = 0;
        if (re.test(t.funcs.name[f])) m[f] = 1;
      }
      m[t.func[0]] = 0; // the synthetic root never matches
      this.matchFuncs = m;
      this.matched = this.shareOf(m);
    }
    this.renderStatus();
  }

  private afterZoom(emit = true): void {
    if (this.matchFuncs) this.matched = this.shareOf(this.matchFuncs);
    // A tooltip left open over the clicked frame would keep the shares of
    // the view before the zoom.
    if (this.hover >= 0 && this.hover < this._tree.n && this.tooltip.style.display === 'block') this.fillTooltip(this.hover);
    this.renderCrumbs();
    this.renderStatus();
    this.draw();
    if (emit) this.emit('zoom', { node: this.zoomNode, path: this.pathKeys(this.zoomNode) });
    this.emitView();
  }

  // ---- DOM --------------------------------------------------------------

  private enableModes(sel: HTMLSelectElement): void {
    const opt = sel.querySelector('option[value="time-order"]') as HTMLOptionElement | null;
    if (!opt) return;
    opt.disabled = !!this.timeOrderWhy;
    // Short in the menu (it sizes the toolbar); the reason in full on hover.
    opt.textContent = this.timeOrderWhy ? `${MODE_LABELS['time-order']} (unavailable)` : MODE_LABELS['time-order'];
    opt.title = this.timeOrderWhy ?? 'samples left to right in the order they were taken';
    sel.title = this.timeOrderWhy ? `time order unavailable: ${this.timeOrderWhy}` : 'layout: merged by name, left heavy, or time order';
  }

  private buildToolbar(idleToggle: boolean, hasThreads: boolean, modes: boolean): HTMLElement {
    const search = h('input', {
      type: 'search',
      class: 'ks-flame-search',
      placeholder: 'search regex  ( / )',
      'aria-label': 'search frames by regular expression',
      spellcheck: 'false',
    });
    let timer = 0;
    search.addEventListener('input', () => {
      // Large trees: wait for a pause in typing rather than search every key.
      clearTimeout(timer);
      if (this._tree.n > 200_000) timer = window.setTimeout(apply, 120);
      else apply();
    });
    const apply = (): void => {
      try {
        this.search(search.value);
        search.classList.remove('ks-invalid');
        search.title = '';
      } catch (e) {
        search.classList.add('ks-invalid');
        search.title = String(e instanceof Error ? e.message : e);
      }
    };
    this.searchInput = search;
    const hide = h('input', { type: 'text', class: 'ks-flame-hide', placeholder: 'hide frames (regex)', 'aria-label': 'hide frames matching a regular expression', spellcheck: 'false' });
    hide.addEventListener('change', () => {
      try {
        this.setHide(hide.value ? new RegExp(hide.value) : null);
        hide.classList.remove('ks-invalid');
      } catch {
        hide.classList.add('ks-invalid');
      }
    });
    this.hideInput = hide;
    const btn = (text: string, title: string, cls: string, fn: (b: HTMLButtonElement) => void): HTMLButtonElement => {
      const b = h('button', { type: 'button', class: cls, title, text });
      b.addEventListener('click', () => fn(b));
      return b;
    };
    const icicle = btn('Icicle', 'root at the top', 'ks-btn-icicle', () => this.setIcicle(!this.icicle));
    icicle.setAttribute('aria-pressed', String(this.icicle));
    const invert = btn('Invert', 'leaf functions at the root (who calls the hot functions)', 'ks-btn-invert', (b) => {
      const on = b.getAttribute('aria-pressed') !== 'true';
      b.setAttribute('aria-pressed', String(on));
      this.setInvert(on);
    });
    invert.setAttribute('aria-pressed', 'false');
    this.invertBtn = invert;
    let modeSel: HTMLSelectElement | null = null;
    if (modes) {
      modeSel = h('select', { class: 'ks-flame-mode', 'aria-label': 'layout: merged by name, left heavy or time order' });
      for (const m of FLAME_MODES) modeSel.append(h('option', { value: m, text: MODE_LABELS[m] }));
      modeSel.value = this.mode;
      this.modeSelect = modeSel;
      this.enableModes(modeSel);
      const sel = modeSel;
      sel.addEventListener('change', () => {
        try {
          this.setMode(sel.value as FlameMode);
        } catch (e) {
          toast(String(e instanceof Error ? e.message : e));
        }
      });
    }
    const split = h('select', { class: 'ks-flame-split', 'aria-label': 'merge or split by process and thread' },
      h('option', { value: 'merge', text: 'all threads merged' }),
      h('option', { value: 'process', text: 'split by process' }),
      h('option', { value: 'thread', text: 'split by thread' }),
    );
    split.value = this.treeOpts.split ?? 'merge';
    this.enableSplit(split, hasThreads);
    this.splitSelect = split;
    split.addEventListener('change', () => this.setSplit(split.value as SplitMode));
    const idle = h('input', { type: 'checkbox', class: 'ks-flame-idle' });
    idle.checked = !this.treeOpts.hideIdle;
    this.idleInput = idle;
    idle.addEventListener('change', () => this.setHideIdle(!idle.checked));
    this.focusChip = h('span', { class: 'ks-chip ks-flame-focus' });
    this.focusChip.hidden = true;
    return h('div', { class: 'ks-toolbar' },
      search,
      btn('Back', 'previous zoom', 'ks-btn-back', () => this.back()),
      btn('Reset', 'reset zoom and search (Esc)', 'ks-btn-reset', () => this.reset()),
      modeSel,
      icicle,
      invert,
      split,
      hide,
      idleToggle ? h('label', { title: 'include samples in idle frames (cpu_idle, swapper, ...)' }, idle, 'idle') : null,
      this.focusChip,
    );
  }

  private renderCrumbs(): void {
    clear(this.crumbs);
    const t = this._tree;
    const path = [0, ...t.path(this.zoomNode)];
    path.forEach((n, i) => {
      if (i > 0) this.crumbs.append(h('span', { class: 'ks-crumb-sep', text: '›' }));
      const label = t.name(n);
      const b = h('button', { type: 'button', class: 'ks-crumb', title: label, text: label.length > 40 ? label.slice(0, 39) + '…' : label });
      if (n === this.zoomNode) b.setAttribute('aria-current', 'true');
      b.addEventListener('click', () => this.zoomTo(n));
      this.crumbs.append(b);
    });
    // Hidden but still laid out, so zooming never shifts the canvas.
    this.crumbs.style.visibility = path.length <= 1 ? 'hidden' : 'visible';
  }

  private renderStatus(): void {
    const t = this._tree;
    if (!t) return;
    const unit = this.unit();
    const total = t.total[0];
    const parts: string[] = [];
    if (this.diff) {
      const d = this.diff;
      parts.push(`before ${fmtWeight(d.beforeSum, unit)} · after ${fmtWeight(d.afterSum, unit)}`);
    } else parts.push(`${fmtWeight(total, unit)} in view`);
    if (this.mode === 'time-order') parts.push('time order: samples left to right as taken');
    if (this.mode === 'time-order' && t.foldedBelow) {
      // Said, not hidden: what is drawn is not every box. The numbers are
      // not from the drawing: they count every sample (exactView).
      parts.push(`too many boxes to draw them all: ${fmtCount(t.foldedBelow.boxes)} boxes under ${fmtWeight(t.foldedBelow.minWeight, unit)} (1/${fmtCount(t.foldedBelow.resolution)} of the view) are drawn folded into their callers, in place; shares, search and the function table still count every sample exactly; pick one thread or a shorter time range to see every box`);
    }
    else if (this.mode === 'left-heavy') parts.push('left heavy: heaviest first');
    if (this.treeOpts.callers) parts.push(`callers of ${this.treeOpts.callers}`);
    if (this.zoomNode !== 0) parts.push(`zoomed: ${t.name(this.zoomNode)} (${fmtPct(t.total[this.zoomNode], total)})`);
    if (this.matched) {
      // "Of all" is of the whole profile, also when a focus dropped stacks.
      parts.push(`matched ${fmtPct(this.matched.all, t.allTotal)} of all, ${fmtPct(this.matched.zoom, t.total[this.zoomNode])} of view`);
    }
    this.status.textContent = parts.join(' · ');
    const s = this.status.dataset;
    s.total = String(total);
    s.allTotal = String(t.allTotal);
    s.zoomTotal = String(t.total[this.zoomNode]);
    s.samples = String(t.sampleCount ?? '');
    s.matchedAll = this.matched ? String(this.matched.all) : '';
    s.matchedZoom = this.matched ? String(this.matched.zoom) : '';
    s.foldedBoxes = this.mode === 'time-order' && t.foldedBelow ? String(t.foldedBelow.boxes) : '';
    s.foldedResolution = this.mode === 'time-order' && t.foldedBelow ? String(t.foldedBelow.resolution) : '';
  }

  private unit(): string {
    const src = this.source;
    if (src === null) return this.pendingUnit;
    return src instanceof Profile ? src.unit : src.after.unit;
  }

  private renderLegend(): void {
    const el = this.legendEl;
    clear(el);
    const t = this._tree;
    if (this.diff) {
      const mode = this.diff.mode === 'normalized' ? 'normalised: change in share of each total' : 'absolute: change in sample counts';
      const grad = h('span', { class: 'ks-diff-gradient' });
      grad.style.background = `linear-gradient(90deg, ${diffColor(-1, 1, this.dark)}, ${diffColor(-0.1, 1, this.dark)}, ${diffColor(0, 1, this.dark)}, ${diffColor(0.1, 1, this.dark)}, ${diffColor(1, 1, this.dark)})`;
      el.append(
        h('span', { class: 'ks-legend-item' }, 'shrank', grad, 'grew'),
        h('span', { class: 'ks-legend-mode', text: `mode: ${mode}` }),
        h('span', { class: 'ks-muted', text: 'width: after (vanished stacks at their before width)' }),
      );
      return;
    }
    // Kinds present, then the heaviest modules with their colours. Sum
    // self weight per function first (typed), then group the functions;
    // a time order drawn folded counts from its exact tree.
    const e = t.exactAt ? this.exactView(0).tree : t;
    const fw = new Float64Array(e.funcs.name.length);
    for (let i = 1; i < e.n; i++) fw[e.func[i]] += e.self[i];
    const kindW = new Map<string, number>();
    const modW = new Map<string, { w: number; kind: string }>();
    for (let f = 0; f < fw.length; f++) {
      const w = fw[f];
      if (w <= 0) continue;
      const k = t.funcs.kind[f];
      kindW.set(k, (kindW.get(k) ?? 0) + w);
      const m = t.funcs.module[f];
      if (m) {
        const e = modW.get(m);
        if (e) e.w += w;
        else modW.set(m, { w, kind: k });
      }
    }
    for (const [k] of [...kindW].sort((a, b) => b[1] - a[1])) {
      if (k === 'root') continue;
      const sw = h('span', { class: 'ks-swatch' });
      sw.style.background = k === 'process' || k === 'thread' ? 'var(--ks-panel)' : kindSwatch(k, this.dark);
      el.append(h('span', { class: 'ks-legend-item' }, sw, KIND_LABELS[k] ?? k));
    }
    const mods = [...modW].sort((a, b) => b[1].w - a[1].w).slice(0, 8);
    if (mods.length) el.append(h('span', { class: 'ks-muted', text: 'modules:' }));
    for (const [m, { kind }] of mods) {
      const sw = h('span', { class: 'ks-swatch' });
      sw.style.background = frameColor(kind, m, m, this.dark);
      const short = m.split('/').pop() ?? m;
      el.append(h('span', { class: 'ks-legend-item', title: m }, sw, short));
    }
  }

  // ---- interaction ------------------------------------------------------

  private eventPos(e: MouseEvent): [number, number] {
    const r = this.canvas.getBoundingClientRect();
    return [e.clientX - r.left, e.clientY - r.top];
  }

  private onMove(e: MouseEvent): void {
    const [x, y] = this.eventPos(e);
    this.setHover(this.nodeAt(x, y), e);
  }

  private onClick(e: MouseEvent): void {
    const [x, y] = this.eventPos(e);
    const n = this.nodeAt(x, y);
    if (n < 0) return;
    const t = this._tree;
    const f = t.func[n];
    if (n > 0) this.emit('select', { func: f, name: t.funcs.name[f], module: t.funcs.module[f] });
    if (e.shiftKey && n > 0 && this.shiftFocus) {
      if (!this.isDiff) this.setFocus(t.funcs.name[f]);
      return;
    }
    this.zoomTo(n);
  }

  private onContext(e: MouseEvent): void {
    const [x, y] = this.eventPos(e);
    const n = this.nodeAt(x, y);
    if (n <= 0) return;
    // Only frames get a menu; elsewhere the browser's own stays.
    e.preventDefault();
    this.setHover(-1, null);
    const f = this._tree.func[n];
    this.emit('context', { node: n, func: f, name: this._tree.funcs.name[f], clientX: e.clientX, clientY: e.clientY });
  }

  private setHover(n: number, e: MouseEvent | null): void {
    if (n !== this.hover) {
      this.hover = n;
      this.scheduleDraw();
    }
    const tip = this.tooltip;
    if (n < 0 || !e) {
      tip.style.display = 'none';
      return;
    }
    this.fillTooltip(n);
    tip.style.display = 'block';
    const pad = 14;
    const w = tip.offsetWidth;
    const hgt = tip.offsetHeight;
    let left = e.clientX + pad;
    let top = e.clientY + pad;
    if (left + w > window.innerWidth - 4) left = Math.max(4, e.clientX - w - pad);
    if (top + hgt > window.innerHeight - 4) top = Math.max(4, e.clientY - hgt - pad);
    tip.style.left = `${left}px`;
    tip.style.top = `${top}px`;
  }

  private fillTooltip(n: number): void {
    const t = this._tree;
    const f = t.func[n];
    const unit = this.unit();
    const tip = this.tooltip;
    clear(tip);
    tip.append(h('div', { class: 'ks-tip-name', text: t.funcs.name[f] }));
    const mod = t.funcs.module[f];
    const kind = t.funcs.kind[f];
    if (mod || (kind && kind !== 'root')) tip.append(h('div', { class: 'ks-muted', text: [mod, KIND_LABELS[kind] ?? kind].filter(Boolean).join(' · ') }));
    const rows: [string, string][] = [];
    if (this.diff) {
      const d = this.diff;
      const norm = d.mode === 'normalized';
      const bt = d.beforeTotal[n];
      const at = d.afterTotal[n];
      const rawBefore = norm && d.afterSum > 0 ? (bt * d.beforeSum) / d.afterSum : bt;
      rows.push(['before', `${fmtWeight(rawBefore, unit)} (${fmtPct(rawBefore, d.beforeSum)})`]);
      rows.push(['after', `${fmtWeight(at, unit)} (${fmtPct(at, d.afterSum)})`]);
      if (norm) rows.push(['change of share', `${d.delta[n] > 0 ? '+' : ''}${fmtShare(d.delta[n])} of total`]);
      else rows.push(['change', `${d.delta[n] > 0 ? '+' : ''}${fmtCount(d.delta[n])} (${bt > 0 ? fmtSignedPct(((at - bt) / bt) * 100) : 'new'})`]);
      if (at === 0 && bt > 0) rows.push(['', 'vanished in after']);
      rows.push(['self before/after', `${fmtCount(norm && d.afterSum > 0 ? (d.beforeSelf[n] * d.beforeSum) / d.afterSum : d.beforeSelf[n])} / ${fmtCount(d.afterSelf[n])}`]);
    } else {
      rows.push([unit === 'samples' ? 'samples' : 'weight', fmtWeight(t.total[n], unit)]);
      rows.push(['% of all', fmtPct(t.total[n], t.total[0])]);
      rows.push(['% of zoomed root', fmtPct(t.total[n], t.total[this.zoomNode])]);
      rows.push(['self', `${fmtWeight(t.self[n], unit)} (${fmtPct(t.self[n], t.total[0])})`]);
    }
    const tbl = h('table');
    for (const [k, v] of rows) tbl.append(h('tr', {}, h('th', { text: k }), h('td', { text: v })));
    tip.append(tbl);
    tip.append(h('div', { class: 'ks-muted ks-tip-hint', text: this.isDiff ? 'click: zoom' : this.shiftFocus ? 'click: zoom · shift+click: focus on function · right click: menu' : 'click: zoom · right click: menu' }));
  }

  // ---- drawing ----------------------------------------------------------

  private rowY(depth: number): number {
    return this.icicle ? depth * ROW : (this._tree.maxDepth - depth) * ROW;
  }

  private scheduleDraw(): void {
    if (this.raf) return;
    this.raf = requestAnimationFrame(() => {
      this.raf = 0;
      this.draw();
    });
  }

  private colorOf(node: number): string {
    const t = this._tree;
    if (this.diff) return diffColor(this.diff.delta[node], this.diff.maxAbsDelta, this.dark);
    const f = t.func[node];
    let c = this.colorCache[f];
    if (c === undefined) {
      const kind = t.funcs.kind[f];
      if (kind === 'root' || kind === 'process' || kind === 'thread') c = this.dark ? '#4a4a55' : '#d9d9e0';
      else c = frameColor(kind, t.funcs.module[f], t.funcs.name[f], this.dark);
      this.colorCache[f] = c;
    }
    return c;
  }

  /** Redraws the canvas now. */
  draw(): void {
    const t0 = performance.now();
    const t = this._tree;
    const cssW = Math.max(100, this.scroller.clientWidth || this.root.clientWidth || 800);
    const rows = t.maxDepth + 1;
    const cssH = rows * ROW;
    const dpr = window.devicePixelRatio || 1;
    const cv = this.canvas;
    if (cv.width !== Math.round(cssW * dpr) || cv.height !== Math.round(cssH * dpr)) {
      cv.width = Math.round(cssW * dpr);
      cv.height = Math.round(cssH * dpr);
      cv.style.width = `${cssW}px`;
      cv.style.height = `${cssH}px`;
    }
    this.widthPx = cssW;
    const ctx = cv.getContext('2d');
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cssW, cssH);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    this.charW = ctx.measureText('abcdefghij').width / 10 || 7.2;
    const textColor = this.dark ? '#f0f0f0' : '#111';
    const matchColor = cssVar('--ks-match', '#e600e6');
    const m = this.matchFuncs;
    const z = this.zoomNode;
    const scale = cssW / (t.total[z] || 1);
    const x0 = t.x[z];
    let frames = 0;

    const drawBox = (n: number, px: number, pw: number): void => {
      const y = this.rowY(t.depth[n]);
      const matchHit = m !== null && m[t.func[n]] === 1;
      ctx.fillStyle = matchHit ? matchColor : this.colorOf(n);
      ctx.globalAlpha = m !== null && !matchHit ? 0.55 : 1;
      const w = Math.max(pw - (pw > 2 ? 0.5 : 0), MIN_PX);
      ctx.fillRect(px, y, w, ROW - 1);
      ctx.globalAlpha = 1;
      if (n === this.hover) {
        ctx.strokeStyle = textColor;
        ctx.lineWidth = 1.5;
        ctx.strokeRect(px + 0.75, y + 0.75, Math.max(0, w - 1.5), ROW - 2.5);
      }
      frames++;
      if (pw > this.charW * 3 + 6) {
        const name = t.funcs.name[t.func[n]];
        const max = Math.floor((pw - 6) / this.charW);
        const label = name.length > max ? name.slice(0, Math.max(1, max - 1)) + '…' : name;
        ctx.fillStyle = matchHit ? '#fff' : textColor;
        ctx.fillText(label, px + 3, y + ROW / 2);
      }
    };

    // Ancestors of the zoom root span the full width (greyed context).
    for (let a = z; ; a = t.parent[a]) {
      drawBox(a, 0, cssW);
      if (a === 0) break;
    }
    const stack: number[] = [];
    const pushKids = (n: number): void => {
      let runStart = -1;
      let runEnd = 0;
      let runDepth = 0;
      const flush = (): void => {
        if (runStart >= 0 && runEnd - runStart >= MIN_PX) {
          // Coalesced block of frames individually too thin to draw.
          ctx.fillStyle = this.dark ? '#55555c' : '#b8b8c0';
          ctx.fillRect(runStart, this.rowY(runDepth), runEnd - runStart, ROW - 1);
          frames++;
        }
        runStart = -1;
      };
      for (let k = t.childStart[n]; k < t.childStart[n + 1]; k++) {
        const c = t.childList[k];
        const pw = t.total[c] * scale;
        if (pw >= MIN_PX) {
          flush();
          stack.push(c);
        } else if (pw > 0) {
          const px = (t.x[c] - x0) * scale;
          if (runStart < 0) {
            runStart = px;
            runDepth = t.depth[c];
          }
          runEnd = px + pw;
        }
      }
      flush();
    };
    pushKids(z);
    while (stack.length) {
      const n = stack.pop() as number;
      drawBox(n, (t.x[n] - x0) * scale, t.total[n] * scale);
      pushKids(n);
    }
    const ms = performance.now() - t0;
    if (this.rootScrollPending) this.showRoot();
    markFirstPaint(t.n);
    this.emit('paint', { ms, frames });
  }
}
