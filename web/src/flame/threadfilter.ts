/** A <select> that filters a profile's samples by process or thread. */
import { h } from '../common/dom';
import { Profile } from './profile';

/**
 * The thread indices a filter value ("all", "p:PID", "t:INDEX") keeps:
 * null for all, undefined when the value names no process or thread of
 * this profile.
 */
export function threadSet(profile: Profile, value: string): ReadonlySet<number> | null | undefined {
  if (value === 'all') return null;
  if (value.startsWith('p:')) {
    const pid = Number(value.slice(2));
    const idx = profile.threads.flatMap((t, i) => (t.pid === pid ? [i] : []));
    return idx.length ? new Set(idx) : undefined;
  }
  if (value.startsWith('t:')) {
    const i = Number(value.slice(2));
    return Number.isInteger(i) && i >= 0 && i < profile.threads.length ? new Set([i]) : undefined;
  }
  return undefined;
}

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
  sel.addEventListener('change', () => onChange(threadSet(profile, sel.value) ?? null));
  return sel;
}
