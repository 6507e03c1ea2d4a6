// `keisoku flame` HTML output: one profile as an interactive flame graph.
import '../common/base.css';
import { h, pageData, showFatal } from '../common/dom';
import { fmtCount, fmtMs, fmtWeight } from '../common/format';
import { installKeys } from '../common/keyboard';
import { FlameGraph } from '../flame/flamegraph';
import { FunctionTable } from '../flame/functable';
import { Profile, ProfileJson } from '../flame/profile';
import { threadFilter } from '../flame/threadfilter';
import './flame.css';

interface FlamePageData {
  title?: string;
  view?: { search?: string | null; icicle?: boolean; invert?: boolean };
  profile: ProfileJson;
}

const app = document.getElementById('app') as HTMLElement;
try {
  // Either a bare profile or { title, view, profile } from crates/report.
  const raw = pageData<ProfileJson | FlamePageData>();
  performance.mark('keisoku:data-parsed');
  const wrapped = 'profile' in raw && typeof raw.profile === 'object' ? (raw as FlamePageData) : null;
  const profile = Profile.from(wrapped ? wrapped.profile : raw);
  performance.mark('keisoku:profile-ready');
  const view = wrapped?.view ?? {};
  const pageTitle = wrapped?.title || profile.title;
  const facts: string[] = [];
  const ns = profile.sampleCount;
  if (ns !== null) facts.push(`${fmtCount(ns)} samples`);
  else if (profile.counts) facts.push(fmtWeight(profile.counts.reduce((a, b) => a + b, 0), profile.unit));
  facts.push(`${fmtCount(profile.frameCount)} distinct frames`, `${fmtCount(profile.nodeCount)} stack nodes`);
  if (profile.durationMs) facts.push(`${fmtMs(profile.durationMs)}`);
  if (profile.unit !== 'samples') facts.push(`weights in ${profile.unit}`);
  app.append(h('header', { class: 'ks-page-head' }, h('h1', { text: pageTitle }), h('span', { class: 'ks-muted', text: facts.join(' · ') })));

  const controls = h('div', { class: 'ks-toolbar ks-page-controls' });
  app.append(controls);
  const graphBox = h('section', { class: 'ks-graph' });
  app.append(graphBox);
  const graph = new FlameGraph(graphBox, profile, { icicle: !!view.icicle });
  if (view.invert) graph.setInvert(true);
  if (view.search) {
    try {
      graph.search(view.search);
    } catch {
      // An invalid preset regex must not hide the graph; the box shows it.
    }
  }

  if (profile.sampleTime) {
    const from = h('input', { type: 'number', step: 'any', min: '0', class: 'ks-range-from', 'aria-label': 'from second', placeholder: '0' });
    const to = h('input', { type: 'number', step: 'any', min: '0', class: 'ks-range-to', 'aria-label': 'to second', placeholder: ((profile.durationMs ?? 0) / 1000).toFixed(1) });
    const apply = (): void => {
      const f = from.value === '' ? null : Number(from.value) * 1000;
      const t = to.value === '' ? null : Number(to.value) * 1000;
      graph.setRange(f, t);
    };
    from.addEventListener('change', apply);
    to.addEventListener('change', apply);
    controls.append(h('label', {}, 'time from', from, 's'), h('label', {}, 'to', to, 's'));
  }
  const tf = threadFilter(profile, (s) => graph.setThreads(s));
  if (tf) controls.append(tf);
  if (!controls.childElementCount) controls.remove();

  app.append(h('h2', { text: 'Functions' }));
  const tableBox = h('section');
  app.append(tableBox);
  new FunctionTable(tableBox, graph);
  app.append(h('footer', { class: 'ks-muted ks-foot', text: `keys: / search · Esc reset · click: zoom · shift+click: focus · weights in ${profile.unit}` }));

  installKeys({ search: () => graph.focusSearch(), reset: () => {
    graph.setFocus(null);
    graph.reset();
  } });
  (window as unknown as { keisoku: unknown }).keisoku = { profile, flame: graph };
} catch (e) {
  showFatal(app, e);
}
