// `keisoku flame` HTML output: one profile as an interactive flame graph.
import '../common/base.css';
import { h, pageData, showFatal } from '../common/dom';
import { fmtCount, fmtMs, fmtWeight } from '../common/format';
import { installKeys } from '../common/keyboard';
import { FlameGraph, PendingProfile } from '../flame/flamegraph';
import { CompactHeader, decodeCompact, isCompact, nextTask, previewTree, whenParsed } from '../flame/compact';
import { CallGraphTable, callGraphOf } from '../flame/callgraph';
import { FunctionTable } from '../flame/functable';
import { FlameViews } from '../flame/flameview';
import { defaultView } from '../flame/viewstate';
import { Profile, ProfileJson } from '../flame/profile';
import { threadFilter } from '../flame/threadfilter';
import './flame.css';

interface FlamePageData {
  title?: string;
  view?: { search?: string | null; icicle?: boolean; invert?: boolean };
  profile: ProfileJson | CompactHeader;
}

/** What the header line says about the profile. */
function factsLine(f: { samples: number | null; weight: number | null; unit: string; frames: number; nodes: number; durationMs: number | null }): string {
  const facts: string[] = [];
  if (f.samples !== null) facts.push(`${fmtCount(f.samples)} samples`);
  else if (f.weight !== null) facts.push(fmtWeight(f.weight, f.unit));
  facts.push(`${fmtCount(f.frames)} distinct frames`, `${fmtCount(f.nodes)} stack nodes`);
  if (f.durationMs) facts.push(`${fmtMs(f.durationMs)}`);
  if (f.unit !== 'samples') facts.push(`weights in ${f.unit}`);
  return facts.join(' · ');
}

const app = document.getElementById('app') as HTMLElement;
async function main(): Promise<void> {
  // Either a bare profile or { title, view, profile } from crates/report;
  // the profile is JSON v1 or the compact header whose columns follow this
  // script (read after the first paint).
  const raw = pageData<ProfileJson | CompactHeader | FlamePageData>();
  performance.mark('keisoku:data-parsed');
  const wrapped = 'profile' in raw && typeof raw.profile === 'object' ? (raw as FlamePageData) : null;
  const pj = wrapped ? wrapped.profile : (raw as ProfileJson | CompactHeader);
  const view = wrapped?.view ?? {};
  const compact = isCompact(pj) ? pj : null;
  const preview = compact ? previewTree(compact) : null;
  let profile: Profile | null = null;
  let pending: PendingProfile | null = null;
  if (compact && preview) {
    pending = {
      preview,
      unit: typeof compact.unit === 'string' ? compact.unit : 'samples',
      threads: compact.has.thread && (compact.threads?.length ?? 0) > 0,
      timeOrder: compact.has.time ? null : 'this profile has no sample timestamps (folded or aggregated input), so there is no time order',
      load: whenParsed().then(() => decodeCompact(compact)),
    };
  } else if (compact) {
    await whenParsed();
    profile = await decodeCompact(compact);
  } else profile = Profile.from(pj);
  performance.mark('keisoku:profile-ready');

  const unit = profile ? profile.unit : (pending as PendingProfile).unit;
  const pageTitle = wrapped?.title || (profile ? profile.title : compact?.title) || 'profile';
  const facts = profile
    ? { samples: profile.sampleCount, weight: profile.counts ? profile.counts.reduce((a, b) => a + b, 0) : null, unit, frames: profile.frameCount, nodes: profile.nodeCount, durationMs: profile.durationMs }
    : { samples: compact?.sample_count ?? null, weight: preview ? preview.total[0] : null, unit, frames: compact?.frame_count ?? 0, nodes: compact?.node_count ?? 0, durationMs: compact?.duration_ms ?? null };
  app.append(h('header', { class: 'ks-page-head' }, h('h1', { text: pageTitle }), h('span', { class: 'ks-muted', text: factsLine(facts) })));

  const controls = h('div', { class: 'ks-toolbar ks-page-controls' });
  app.append(controls);
  const graphBox = h('section', { class: 'ks-graph' });
  app.append(graphBox);
  const graph = new FlameGraph(graphBox, profile ?? (pending as PendingProfile), { icicle: !!view.icicle, modes: true });
  if (view.invert) graph.setInvert(true);
  if (view.search) {
    try {
      graph.search(view.search);
    } catch {
      // An invalid preset regex must not hide the graph; the box shows it.
    }
  }

  const hasTime = profile ? profile.sampleTime !== null : !!compact?.has.time;
  let range: { from: HTMLInputElement; to: HTMLInputElement } | null = null;
  if (hasTime) {
    const durationMs = profile ? profile.durationMs : compact?.duration_ms;
    const from = h('input', { type: 'number', step: 'any', min: '0', class: 'ks-range-from', 'aria-label': 'from second', placeholder: '0' });
    const to = h('input', { type: 'number', step: 'any', min: '0', class: 'ks-range-to', 'aria-label': 'to second', placeholder: ((durationMs ?? 0) / 1000).toFixed(1) });
    const apply = (): void => {
      const f = from.value === '' ? null : Number(from.value) * 1000;
      const t = to.value === '' ? null : Number(to.value) * 1000;
      graph.setRange(f, t);
    };
    from.addEventListener('change', apply);
    to.addEventListener('change', apply);
    controls.append(h('label', {}, 'time from', from, 's'), h('label', {}, 'to', to, 's'));
    range = { from, to };
  }
  // cProfile/pstats: the recorded call graph, under its estimated flame graph.
  const cg = callGraphOf(pj);
  if (cg) app.append(new CallGraphTable(cg, (re) => graph.search(re)).root);
  app.append(h('h2', { text: 'Functions' }));
  const tableBox = h('section');
  app.append(tableBox);
  app.append(h('footer', { class: 'ks-muted ks-foot', text: `keys: ? help · / search · Esc reset · c copy name · s sandwich · m mode · click: zoom · shift+click: focus · right click: menu · weights in ${unit}` }));
  installKeys({ search: () => graph.focusSearch(), reset: () => {
    graph.setFocus(null);
    graph.reset();
  } });

  // Everything below needs the whole profile: a compact page's preview
  // was drawn above; its columns are read now.
  if (!profile) {
    const wait = h('p', { class: 'ks-muted ks-loading', text: 'reading the profile…' });
    tableBox.append(wait);
    profile = await (pending as PendingProfile).load;
    await graph.ready;
    // The full tree is drawn; the function table follows in its own task.
    await nextTask();
    wait.remove();
  }
  const tf = threadFilter(profile, (s) => graph.setThreads(s));
  if (tf) controls.append(tf);
  if (!controls.childElementCount) controls.remove();
  let views: FlameViews | null = null;
  const table = new FunctionTable(tableBox, graph, FlameViews.tableHooks(() => views));
  const base = { ...defaultView(), search: view.search ?? '', icicle: !!view.icicle, invert: !!view.invert };
  views = new FlameViews({ profile, graph, graphBox, table, range, threadSelect: tf, base });
  views.start();
  (window as unknown as { keisoku: unknown }).keisoku = { profile, flame: graph, views, table };
}
main().catch((e) => showFatal(app, e));
