// `keisoku scope` HTML output: subsecond heat map; a selected range shows
// the flame graph of exactly those samples, two ranges show their diff.
import '../common/base.css';
import { h, pageData, showFatal, clear } from '../common/dom';
import { fmtCount, fmtMs } from '../common/format';
import { installKeys } from '../common/keyboard';
import { FlameGraph } from '../flame/flamegraph';
import { Profile, ProfileJson, ProfileError } from '../flame/profile';
import { threadFilter } from '../flame/threadfilter';
import { HeatMap } from '../heatmap/heatmap';
import { CompactHeader, decodeCompact, isCompact, previewTree, whenParsed } from '../flame/compact';
import './flame.css';

interface ScopeData {
  title?: string;
  view?: { rows?: number; idle?: boolean };
  profile: ProfileJson | CompactHeader;
}

const app = document.getElementById('app') as HTMLElement;
async function main(): Promise<void> {
  const data = pageData<ScopeData>();
  if (!data || typeof data !== 'object' || !data.profile) throw new ProfileError('scope: the page data has no "profile"');
  // A compact page's columns follow this script. With a preview, the
  // flame graph is drawn now and the heat map once the columns are read.
  const pj = data.profile;
  const compact = isCompact(pj) ? pj : null;
  const preview = compact ? previewTree(compact) : null;
  let idle = !!data.view?.idle;
  const load = compact ? whenParsed().then(() => decodeCompact(compact)) : Promise.resolve(Profile.from(pj));
  let profile = compact && preview ? null : await load;
  const durationMs = profile ? profile.durationMs : compact?.duration_ms;
  const sampleCount = profile ? profile.sampleCount : compact?.sample_count;
  app.append(h('header', { class: 'ks-page-head' },
    h('h1', { text: data.title || (profile ? profile.title : compact?.title) || 'profile' }),
    h('span', { class: 'ks-muted', text: `${fmtCount(sampleCount ?? 0)} samples · ${fmtMs(durationMs ?? 0)} · subsecond heat map` })));

  const bar = h('div', { class: 'ks-scope-bar' });
  app.append(bar);
  const heatBox = h('section', { class: 'ks-heat-box' });
  app.append(heatBox);
  const title = h('h2', { class: 'ks-scope-title', text: 'Flame graph: all samples' });
  app.append(title);
  const graphBox = h('section', { class: 'ks-graph' });
  app.append(graphBox);
  let threads: ReadonlySet<number> | null = null;
  // The preview leaves idle samples out only if this page opens that way.
  const usePreview = preview !== null && compact !== null && compact.preview?.hide_idle === !idle;
  let graph: FlameGraph;
  if (profile) graph = new FlameGraph(graphBox, profile, { hideIdle: !idle, idleToggle: false });
  else if (usePreview && compact) {
    const unit = typeof compact.unit === 'string' ? compact.unit : 'samples';
    graph = new FlameGraph(graphBox, { preview, unit, threads: compact.has.thread && (compact.threads?.length ?? 0) > 0, load }, { hideIdle: !idle, idleToggle: false });
    heatBox.append(h('p', { class: 'ks-muted ks-loading', text: 'reading the samples…' }));
  } else {
    profile = await load;
    graph = new FlameGraph(graphBox, profile, { hideIdle: !idle, idleToggle: false });
  }
  if (!profile) {
    profile = await load;
    await graph.ready;
    heatBox.replaceChildren();
  }
  const heat = new HeatMap(heatBox, profile, { rows: data.view?.rows ?? 50, idle });
  let diffGraph: FlameGraph | null = null;
  const handle = { profile, heat, flame: graph, diff: null as FlameGraph | null };

  const showPlain = (): void => {
    if (!diffGraph) return;
    diffGraph.destroy();
    diffGraph = null;
    handle.diff = null;
    clear(graphBox);
    graph = new FlameGraph(graphBox, profile, { hideIdle: !idle, idleToggle: false });
    graph.setThreads(threads);
    handle.flame = graph;
  };
  heat.on('select', (s) => {
    const sel = heat.selections();
    if (s.which === 'a') {
      showPlain();
      graph.setRange(s.fromMs, s.toMs);
      title.textContent = `Flame graph: ${fmtMs(s.fromMs)} – ${fmtMs(s.toMs)} (${fmtCount(s.samples)} samples)`;
    } else if (sel.a && sel.b) {
      graph.destroy();
      diffGraph?.destroy();
      clear(graphBox);
      diffGraph = new FlameGraph(graphBox, { before: profile, after: profile, mode: 'normalized', beforeRange: sel.a, afterRange: sel.b }, { hideIdle: !idle, idleToggle: false });
      diffGraph.setThreads(threads);
      handle.diff = diffGraph;
      title.textContent = `Differential flame graph: A ${fmtMs(sel.a[0])} – ${fmtMs(sel.a[1])} → B ${fmtMs(sel.b[0])} – ${fmtMs(sel.b[1])}`;
    }
  });
  const clearSel = (): void => {
    heat.clearSelection();
    showPlain();
    graph.setRange(null, null);
    title.textContent = 'Flame graph: all samples';
  };
  heat.on('clear', () => undefined);

  const tf = threadFilter(profile, (s) => {
    threads = s;
    heat.setThreads(s);
    // Only the graph on screen is rebuilt; showPlain() applies the filters to a new one.
    if (diffGraph) diffGraph.setThreads(s);
    else graph.setThreads(s);
  });
  if (tf) bar.append(tf);
  const idleBox = h('input', { type: 'checkbox', class: 'ks-scope-idle' });
  idleBox.checked = idle;
  idleBox.addEventListener('change', () => {
    idle = idleBox.checked;
    heat.setIdle(idle);
    if (diffGraph) diffGraph.setHideIdle(!idle);
    else graph.setHideIdle(!idle);
  });
  bar.append(h('label', { title: 'count samples in idle frames (cpu_idle, swapper, ...)' }, idleBox, 'include idle'));
  bar.append(h('button', { type: 'button', class: 'ks-scope-clear', text: 'Clear selection', onclick: clearSel }));

  installKeys({ search: () => (diffGraph ?? graph).focusSearch(), reset: () => {
    // Esc: back to all samples, no zoom, no search.
    if (heat.selections().a || heat.selections().b) clearSel();
    (diffGraph ?? graph).reset();
  } });
  (window as unknown as { keisoku: unknown }).keisoku = handle;
}
main().catch((e) => showFatal(app, e));
