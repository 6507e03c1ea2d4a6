/**
 * Section 5: the profile: subsecond heat map and flame graph (the
 * components of web/src/flame and web/src/heatmap). A range selected on the
 * heat map or on any timeline redraws the flame graph for just that range.
 * Profile times run on the profile's own clock; `offsetMs` maps them onto
 * the run's.
 */
import { h } from '../common/dom';
import { Emitter } from '../common/events';
import { fmtCount, fmtSecondsExact } from '../common/format';
import { FlameGraph } from '../flame/flamegraph';
import { FunctionTable, regexEscape } from '../flame/functable';
import { Profile } from '../flame/profile';
import { threadFilter } from '../flame/threadfilter';
import { HeatMap } from '../heatmap/heatmap';
import type { TimeRange } from '../charts/timelines';
import { fmtValue } from '../charts/units';
import type { RunJson } from './types';
import { profileOffsetMs } from './data';

/** The profile section's components and their range wiring. */
export class ProfileView extends Emitter<{ range: TimeRange | null }> {
  readonly sec: HTMLElement;
  readonly flame: FlameGraph | null = null;
  readonly heat: HeatMap | null = null;
  readonly profile: Profile | null = null;
  readonly offsetMs: number;
  private readonly rangeNote: HTMLElement;
  private applying = false;
  private flameTitle: HTMLElement | null = null;
  private flameBox: HTMLElement | null = null;
  private diffBox: HTMLElement | null = null;
  private threads: ReadonlySet<number> | null = null;
  /** The differential flame graph of heat-map range B against A, while both are selected. */
  diff: FlameGraph | null = null;
  /** The wall-clock flame graph, when the run has a wall-clock profile. */
  readonly wallFlame: FlameGraph | null = null;

  /** Builds the section inside `parent` (attached first: the components size themselves from it). */
  constructor(run: RunJson, parent: HTMLElement) {
    super();
    this.sec = h('section', { id: 'profile', class: 'ks-section' }, h('h2', { text: 'Profile' }));
    parent.append(this.sec);
    this.offsetMs = profileOffsetMs(run);
    this.rangeNote = h('span', { class: 'ks-range-note', 'aria-live': 'polite' });
    if (!run.profile) {
      this.sec.append(h('p', { class: 'ks-muted ks-empty', text: 'No profile recorded: run with --profile perf (or py-spy) to see where the server spent its CPU.' }));
      return;
    }
    let profile: Profile;
    try {
      profile = Profile.from(run.profile);
    } catch (e) {
      this.sec.append(h('p', { class: 'ks-fatal', text: `The profile could not be read: ${e instanceof Error ? e.message : String(e)}` }));
      return;
    }
    this.profile = profile;
    const facts = [profile.sampleCount !== null ? `${fmtCount(profile.sampleCount)} samples` : null, `${fmtCount(profile.frameCount)} distinct frames`, profile.durationMs ? fmtValue(profile.durationMs, 'ms') : null].filter(Boolean).join(' · ');
    const bar = h('div', { class: 'ks-toolbar' }, h('span', { class: 'ks-muted', text: facts }), this.rangeNote);
    this.sec.append(bar);
    if (profile.sampleTime) {
      const heatBox = h('div', { class: 'ks-heat-box' });
      this.sec.append(h('h3', { text: 'Subsecond heat map' }), h('p', { class: 'ks-muted ks-hint', text: 'One column per second, one cell per 1/50 s, darker = more samples. Drag across cells to select a range.' }), heatBox);
      this.heat = new HeatMap(heatBox, profile, { rows: 50 });
      this.heat.on('select', (s) => {
        if (s.which === 'b') {
          this.showDiff();
          return;
        }
        this.dropDiff();
        if (this.applying) return;
        this.showRange({ fromMs: s.fromMs + this.offsetMs, toMs: s.toMs + this.offsetMs });
        this.flame?.setRange(s.fromMs, s.toMs);
        this.emit('range', { fromMs: s.fromMs + this.offsetMs, toMs: s.toMs + this.offsetMs });
      });
      this.heat.on('clear', () => {
        this.dropDiff();
        if (this.applying) return;
        this.showRange(null);
        this.flame?.setRange(null, null);
        this.emit('range', null);
      });
    } else {
      this.sec.append(h('p', { class: 'ks-muted', text: 'This profile has no sample times, so it has no heat map and ignores time ranges.' }));
    }
    const tf = threadFilter(profile, (s) => {
      this.threads = s;
      this.flame?.setThreads(s);
      this.heat?.setThreads(s);
      this.diff?.setThreads(s);
    });
    if (tf) bar.append(tf);
    const flameBox = h('div', { class: 'ks-flame-box' });
    this.flameTitle = h('h3', { text: 'Flame graph' });
    this.diffBox = h('div', { class: 'ks-diff-box' });
    this.sec.append(this.flameTitle, this.diffBox, flameBox);
    this.flameBox = flameBox;
    this.flame = new FlameGraph(flameBox, profile, { maxHeight: '60vh' });
    const details = h('details', { class: 'ks-functions' }, h('summary', { text: 'Functions by self and total time' }));
    this.sec.append(details);
    new FunctionTable(details, this.flame);
    if (run.wall_profile) this.wallFlame = this.addWall(run);
  }

  /**
   * The second flame graph: the wall-clock profile, where a thread blocked
   * in a call is as wide as the time it waits (on-CPU samples show only
   * what it computes). Same clock as the CPU profile, so ranges apply.
   */
  private addWall(run: RunJson): FlameGraph | null {
    let wall: Profile;
    try {
      wall = Profile.from(run.wall_profile);
    } catch (e) {
      this.sec.append(h('p', { class: 'ks-fatal', text: `The wall-clock profile could not be read: ${e instanceof Error ? e.message : String(e)}` }));
      return null;
    }
    const box = h('div', { class: 'ks-flame-box ks-wall-flame' });
    const facts = [wall.sampleCount !== null ? `${fmtCount(wall.sampleCount)} samples` : null, `${fmtCount(wall.frameCount)} distinct frames`].filter(Boolean).join(' · ');
    this.sec.append(
      h('h3', { id: 'wall-clock', text: 'Wall-clock flame graph' }),
      h('p', { class: 'ks-muted ks-hint', text: `Every thread at every tick, waiting or running (${facts}): a call that blocks is as wide as the time it holds the thread; idle workers wait in select, poll or accept.` }),
      box,
    );
    // The thread filter indexes the CPU profile's threads, not these.
    return new FlameGraph(box, wall, { maxHeight: '60vh' });
  }

  /** Applies a range on the run's clock (null: everything) without emitting. */
  setRange(range: TimeRange | null): void {
    this.showRange(range);
    if (!this.flame || !this.profile?.sampleTime) return;
    this.applying = true;
    try {
      if (range) {
        const from = range.fromMs - this.offsetMs;
        const to = range.toMs - this.offsetMs;
        this.flame.setRange(from, to);
        this.wallFlame?.setRange(from, to);
        this.heat?.select('a', from, to);
      } else {
        this.flame.setRange(null, null);
        this.wallFlame?.setRange(null, null);
        this.heat?.clearSelection();
      }
    } finally {
      this.applying = false;
    }
  }

  /**
   * Highlights frames by exact name (a finding's frames); null clears. With
   * `zoom`, the graph also zooms to the widest of them, so a 2% frame is
   * readable rather than a sliver.
   */
  highlight(names: string[] | null, zoom = false): void {
    if (!this.flame) return;
    // Reset clears the search too, so it goes first.
    if (zoom) this.flame.reset();
    this.flame.search(names && names.length ? `^(${names.map(regexEscape).join('|')})$` : null);
    if (!zoom || !names?.length) return;
    const tree = this.flame.tree;
    const want = new Set(names);
    let best = -1;
    for (let n = 1; n < tree.n; n++) if (want.has(tree.name(n)) && (best < 0 || tree.total[n] > tree.total[best])) best = n;
    // Zoom to its caller, so the frame is shown with its siblings.
    if (best > 0) this.flame.zoomTo(tree.parent[best] > 0 ? tree.parent[best] : best);
  }

  /**
   * Shows B against A as the scope page does: a differential flame graph
   * (normalised: change in each frame's share) in place of the plain one.
   */
  private showDiff(): void {
    const sel = this.heat?.selections();
    if (!this.profile || !sel?.a || !sel.b || !this.diffBox || !this.flameBox || !this.flameTitle) return;
    this.diff?.destroy();
    this.diff = new FlameGraph(this.diffBox, { before: this.profile, after: this.profile, mode: 'normalized', beforeRange: sel.a, afterRange: sel.b }, { maxHeight: '60vh', hideIdle: true });
    if (this.threads) this.diff.setThreads(this.threads);
    this.flameBox.style.display = 'none';
    const heat = this.heat as HeatMap;
    const label = (r: [number, number]): string => `${fmtSecondsExact(r[0] + this.offsetMs)} – ${fmtSecondsExact(r[1] + this.offsetMs)} (${fmtCount(heat.samplesIn(r[0], r[1]))} samples)`;
    this.flameTitle.textContent = `Differential flame graph: B ${label(sel.b)} against A ${label(sel.a)}; red = larger share in B`;
  }

  private dropDiff(): void {
    if (!this.diff) return;
    this.diff.destroy();
    this.diff = null;
    if (this.flameBox) this.flameBox.style.display = '';
    if (this.flameTitle) this.flameTitle.textContent = 'Flame graph';
  }

  private showRange(range: TimeRange | null): void {
    this.rangeNote.textContent = range ? `range ${fmtSecondsExact(range.fromMs)} – ${fmtSecondsExact(range.toMs)} of the run` : '';
  }
}
