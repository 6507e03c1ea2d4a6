/**
 * The sandwich view of one function (as speedscope's): its callers as a
 * flame graph growing up from it, its callees as an icicle hanging down
 * from it, both of the same samples (every stack through the function, cut
 * at its outermost call), so the two halves meet at equal width.
 */
import { h } from '../common/dom';
import { fmtPct, fmtWeight } from '../common/format';
import { FlameGraph, GraphView } from './flamegraph';
import { Profile } from './profile';

/** Filters the sandwich takes over from the main graph. */
export interface SandwichFilters {
  threads: ReadonlySet<number> | null;
  fromMs: number | null;
  toMs: number | null;
}

/** The two graphs of a sandwich and their headings. */
export class SandwichView {
  readonly root: HTMLElement;
  /** Callers of the function (the function at the bottom). */
  readonly callers: FlameGraph;
  /** The function and its callees (the function at the top). */
  readonly callees: FlameGraph;
  private readonly title: HTMLElement;
  private readonly facts: HTMLElement;
  private fn: string | null = null;

  /** `first`: the function shown first (its trees are the graphs' first builds). */
  constructor(container: HTMLElement, private readonly profile: Profile, first: string) {
    this.title = h('h2', { class: 'ks-sandwich-title' });
    this.facts = h('div', { class: 'ks-muted ks-sandwich-facts' });
    const up = h('div', { class: 'ks-sandwich-callers' });
    const down = h('div', { class: 'ks-sandwich-callees' });
    this.root = h('section', { class: 'ks-sandwich', 'aria-label': 'sandwich view' },
      this.title,
      this.facts,
      h('h3', { text: 'Callers (the function at the bottom, its callers above)' }),
      up,
      h('h3', { text: 'Callees (the function at the top, what it calls below)' }),
      down,
    );
    container.append(this.root);
    const opts = { toolbar: false, legend: false, shiftFocus: false, maxHeight: '34vh' };
    this.callers = new FlameGraph(up, profile, { ...opts, icicle: false, callers: first });
    this.callees = new FlameGraph(down, profile, { ...opts, icicle: true, focus: first });
  }

  /** The function shown, or null. */
  get func(): string | null {
    return this.fn;
  }

  /**
   * Shows `name` under the main graph's filters; time order is not a
   * sandwich layout, so it falls back to merged.
   */
  show(name: string, view: GraphView, filters: SandwichFilters): void {
    this.fn = name;
    const shared: Partial<GraphView> = {
      mode: view.mode === 'left-heavy' ? 'left-heavy' : 'merged',
      hide: view.hide,
      idle: view.idle,
      split: view.split,
      invert: false,
      search: view.search,
    };
    // One build per half: the callers half gets its function with the filters.
    this.callees.applyView({ ...shared, focus: name }, { ...filters, callers: null });
    this.callers.applyView({ ...shared, focus: null }, { ...filters, callers: name });
    const t = this.callees.tree;
    const whole = t.allTotal;
    const through = t.total[0];
    this.title.textContent = `Sandwich: ${name}`;
    this.facts.textContent = through > 0
      ? `${fmtWeight(through, this.profile.unit)} in stacks through it (${fmtPct(through, whole)} of all in view)`
      : 'no samples through this function under the current filters';
  }
}
