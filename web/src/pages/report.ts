// `keisoku report` (and serve's /runs/ID): one run, top to bottom: verdict,
// sweep, routes, timelines, profile, findings. One time range is shared by
// every view: select it on a timeline, the heat map or a finding.
import '../common/base.css';
import '../report/report.css';
import { h, pageData, showFatal } from '../common/dom';
import { installKeys } from '../common/keyboard';
import type { TimeRange } from '../charts/timelines';
import { durationOf, phasesOf, targetsOf } from '../report/data';
import { findingsSection, topFindings, type FindingFocus } from '../report/findings';
import { ProfileView } from '../report/profile-section';
import { routesSection } from '../report/routes';
import { sweepSection } from '../report/sweep-section';
import { timelineSection } from '../report/timeline-section';
import type { ReportData } from '../report/types';
import { VerdictView } from '../report/verdict';

/** The range in the page's URL (#from=MS&to=MS), so a link reopens it. */
function rangeFromHash(): TimeRange | null {
  const p = new URLSearchParams(location.hash.replace(/^#/, ''));
  const from = Number(p.get('from'));
  const to = Number(p.get('to'));
  return p.has('from') && p.has('to') && Number.isFinite(from) && Number.isFinite(to) && to > from && from >= 0 ? { fromMs: from, toMs: to } : null;
}

/** Writes the range into the URL without adding a history entry per drag. */
function rangeToHash(range: TimeRange | null): void {
  const hash = range ? `#from=${Math.round(range.fromMs)}&to=${Math.round(range.toMs)}` : '';
  if (hash === location.hash || (!hash && !location.hash.includes('from='))) return;
  history.replaceState(null, '', hash || `${location.pathname}${location.search}`);
}

/** Puts the profile's sample times back from the page's microsecond deltas. */
function restoreSampleTimes(data: ReportData): void {
  const d = data.profile_time_delta_us;
  const samples = data.run.profile?.samples;
  if (!Array.isArray(d) || !samples) return;
  const t = new Array<number>(d.length);
  let us = 0;
  for (let i = 0; i < d.length; i++) {
    us += d[i];
    t[i] = us / 1000;
  }
  samples.time_ms = t;
}

/** Resolves after the browser has painted what is on the page so far. */
function painted(): Promise<void> {
  return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
}

const app = document.getElementById('app') as HTMLElement;
async function main(): Promise<void> {
  performance.mark('keisoku:start');
  const data = pageData<ReportData>();
  performance.mark('keisoku:parsed');
  const run = data.run;
  if (!run || typeof run !== 'object' || !run.run) throw new Error('the embedded data is not a run');
  restoreSampleTimes(data);
  const meta = run.run;
  const title = meta.name ? `${meta.name}` : meta.id ?? 'run';
  const nav = h('nav', {});
  if (data.served) nav.append(h('a', { href: '/', text: '← all runs' }), h('a', { href: `/api/runs/${encodeURIComponent(meta.id ?? '')}`, text: 'Run JSON' }));
  // Every target the run loaded, not only the first: a short list inline,
  // a long one folded behind its count.
  const targets = targetsOf(run);
  const targetEl =
    targets.length > 3
      ? h('details', { class: 'ks-targets' }, h('summary', { text: `${targets.length} targets` }), h('ul', {}, ...targets.map((t) => h('li', { text: t }))))
      : h('span', { class: 'ks-muted ks-targets', text: targets.join(' · ') });
  app.append(
    h('header', { class: 'ks-page-head' }, h('h1', { text: `keisoku report: ${title}` }), targetEl, nav),
    h('nav', { class: 'ks-toc', 'aria-label': 'sections' }, ...['verdict', 'sweep', 'routes', 'timelines', 'profile', 'findings'].map((s) => h('a', { href: `#${s}`, text: s }))),
  );
  const width = (): number => Math.max(320, app.clientWidth - 8);
  const verdict = new VerdictView(run);
  app.append(verdict.sec);
  // The first screen answers: verdict, knee and the top findings; a click
  // on one is handled once the views below exist.
  let onFinding: (f: FindingFocus) => void = () => {};
  verdict.findingsSlot.append(topFindings(run.findings, 3, (f) => onFinding(f)));
  app.append(sweepSection(run.results, width()));
  const routes = routesSection(run.routes, run.route_seconds);
  app.append(routes.sec);
  // The top of the page paints first; the timelines and the profile (a
  // million samples can take a while) are built right after.
  await painted();
  performance.mark('keisoku:first-paint');
  const { timelines } = timelineSection(app, run, durationOf(run), phasesOf(run));
  performance.mark('keisoku:timelines');
  const profile = new ProfileView(run, app);
  performance.mark('keisoku:profile');

  // The one selected range; every view is told, except the one it came from.
  let current: TimeRange | null = null;
  const select = (range: TimeRange | null, from: 'timeline' | 'profile' | 'other'): void => {
    current = range;
    if (from !== 'timeline') timelines?.setRange(range);
    if (from !== 'profile') profile.setRange(range);
    verdict.setRange(range);
    routes.setRange(range);
    rangeToHash(range);
  };
  timelines?.on('range', (r) => select(r, 'timeline'));
  profile.on('range', (r) => select(r, 'profile'));
  const focus = (f: FindingFocus, scroll: boolean): void => {
    select(f.rangeMs ? { fromMs: f.rangeMs[0], toMs: f.rangeMs[1] } : null, 'other');
    profile.highlight(f.frames.length ? f.frames : null, true);
    if (scroll) document.getElementById(f.frames.length && profile.flame ? 'profile' : 'timelines')?.scrollIntoView({ behavior: 'smooth', block: 'start' });
  };
  onFinding = (f) => focus(f, true);
  app.append(findingsSection(run.findings, (f) => focus(f, true)));
  app.append(h('footer', { class: 'ks-muted ks-foot', text: 'keys: / search frames · Esc reset range, zoom and search · drag on a chart or the heat map to select a range (shift+drag on the heat map: a second range to compare)' }));
  const fromUrl = rangeFromHash();
  if (fromUrl) select(fromUrl, 'other');
  else if (data.range_ms) select({ fromMs: data.range_ms[0], toMs: data.range_ms[1] }, 'other');
  window.addEventListener('hashchange', () => {
    const r = rangeFromHash();
    if (r && (!current || r.fromMs !== Math.round(current.fromMs) || r.toMs !== Math.round(current.toMs))) select(r, 'other');
  });
  installKeys({
    search: () => profile.flame?.focusSearch(),
    reset: () => {
      select(null, 'other');
      profile.flame?.search(null);
      profile.flame?.reset();
    },
  });
  // For tests and the curious: the live components.
  (window as unknown as { keisoku: unknown }).keisoku = { run, timelines, profile, verdict, routes, range: () => current };
  performance.mark('keisoku:ready');
}
main().catch((e) => showFatal(app, e));
