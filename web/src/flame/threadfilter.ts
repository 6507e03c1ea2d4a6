/** A <select> that filters a profile's samples by process or thread. */
import { h } from '../common/dom';
import { Profile } from './profile';

/**
 * Builds the filter; `onChange` receives the allowed thread indices (null:
 * all). Returns null when the profile has no thread information.
 */
export function threadFilter(profile: Profile, onChange: (threads: ReadonlySet<number> | null) => void): HTMLSelectElement | null {
  if (!profile.sampleThread || profile.threads.length === 0) return null;
  const sel = h('select', { class: 'ks-thread-filter', 'aria-label': 'filter by process or thread' });
  sel.append(h('option', { value: 'all', text: `all processes and threads (${profile.threads.length})` }));
  const byPid = new Map<number, number[]>();
  profile.threads.forEach((t, i) => {
    const l = byPid.get(t.pid);
    if (l) l.push(i);
    else byPid.set(t.pid, [i]);
  });
  for (const [pid, idx] of byPid) {
    const comm = profile.processName(pid);
    const group = h('optgroup', { label: `${comm} [pid ${pid}]` });
    if (idx.length > 1) group.append(h('option', { value: `p:${pid}`, text: `process ${pid}: all ${idx.length} threads` }));
    for (const i of idx) group.append(h('option', { value: `t:${i}`, text: `thread ${profile.threadLabel(i)}` }));
    sel.append(group);
  }
  sel.addEventListener('change', () => {
    const v = sel.value;
    if (v === 'all') onChange(null);
    else if (v.startsWith('p:')) onChange(new Set(byPid.get(Number(v.slice(2))) ?? []));
    else onChange(new Set([Number(v.slice(2))]));
  });
  return sel;
}
