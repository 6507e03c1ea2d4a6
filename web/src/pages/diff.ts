// `keisoku diff` HTML output: a differential flame graph and regression tables.
import '../common/base.css';
import { h, pageData, showFatal } from '../common/dom';
import { fmtCount } from '../common/format';
import { installKeys } from '../common/keyboard';
import { FlameGraph } from '../flame/flamegraph';
import { Profile, DiffJson, ProfileError } from '../flame/profile';
import { regressionTables } from '../flame/regressions';
import { regexEscape } from '../flame/functable';
import './flame.css';

const app = document.getElementById('app') as HTMLElement;
try {
  const raw = pageData<DiffJson | { title?: string; diff: DiffJson }>();
  const data: DiffJson = 'diff' in raw ? { ...raw.diff, title: raw.title ?? raw.diff.title } : raw;
  if (!data || data.version !== 1) throw new ProfileError('diff: version must be 1');
  const mode = data.mode === 'normalized' ? 'normalized' : 'absolute';
  const before = Profile.from(data.before);
  const after = Profile.from(data.after);
  const title = data.title ?? `${before.title} → ${after.title}`;
  app.append(h('header', { class: 'ks-page-head' },
    h('h1', { text: title }),
    h('span', { class: 'ks-muted', text: `before: ${before.title} · after: ${after.title} · ${mode === 'normalized' ? 'normalised (shares of each total)' : 'absolute (sample counts)'}` })));
  const box = h('section', { class: 'ks-graph' });
  app.append(box);
  const graph = new FlameGraph(box, { before, after, mode });
  const tables = h('section');
  app.append(tables);
  regressionTables(tables, Array.isArray(data.table) ? data.table : [], {
    onPick: (r) => graph.search(`^${regexEscape(r.frame)}$`),
  });
  app.append(h('footer', { class: 'ks-muted ks-foot', text: `red: grew · blue: shrank · keys: / search · Esc reset · ${fmtCount(graph.tree.n)} merged stack nodes` }));
  installKeys({ search: () => graph.focusSearch(), reset: () => graph.reset() });
  (window as unknown as { keisoku: unknown }).keisoku = { before, after, flame: graph };
} catch (e) {
  showFatal(app, e);
}
