/**
 * The flame page's whole view as plain data, and its URL form. No DOM and
 * no drawing here (the page applies a view to its components and writes it
 * back after each change), so a link or a reload opens the same view and
 * the encoding is tested on its own (web/tests/flame-viewstate.test.mjs).
 *
 *   #mode=left-heavy&z=main&z=handle_request&q=malloc&fn=memcpy&view=sandwich
 */

/** How the flame graph lays out stacks. */
export type FlameMode = 'merged' | 'left-heavy' | 'time-order';

/** Every mode, in the order the page offers them. */
export const FLAME_MODES: readonly FlameMode[] = ['merged', 'left-heavy', 'time-order'];

/** What each mode is called on the page. */
export const MODE_LABELS: Record<FlameMode, string> = {
  merged: 'merged (by name)',
  'left-heavy': 'left heavy',
  'time-order': 'time order',
};

/** How samples are grouped under the root (as tree.ts's SplitMode). */
export type SplitView = 'merge' | 'process' | 'thread';

/** Everything a link to the flame page restores. */
export interface FlameView {
  /** Which panel: the flame graph or the sandwich of `fn`. */
  panel: 'flame' | 'sandwich';
  mode: FlameMode;
  /** Zoom path: frame names from the root (exclusive) to the zoomed frame. */
  zoom: string[];
  /** Search regex as typed ("" for none). */
  search: string;
  /** Focused function (shift+click), or null. */
  focus: string | null;
  /** Hide regex as typed ("" for none). */
  hide: string;
  invert: boolean;
  icicle: boolean;
  split: SplitView;
  /** Idle frames shown. */
  idle: boolean;
  /** Thread filter: "all", "p:PID" or "t:THREAD_INDEX" (threadfilter.ts values). */
  threads: string;
  /** Time range in seconds, null = unbounded. */
  from: number | null;
  to: number | null;
  /** Selected function (function table, sandwich), or null. */
  fn: string | null;
}

/** The view of a page opened without a link. */
export function defaultView(): FlameView {
  return { panel: 'flame', mode: 'merged', zoom: [], search: '', focus: null, hide: '', invert: false, icicle: false, split: 'merge', idle: true, threads: 'all', from: null, to: null, fn: null };
}

/** What the profile allows, for checking a decoded link against it. */
export interface ViewCaps {
  /** Why time order is unavailable (no timestamps), or null. */
  timeOrder: string | null;
  /** The profile has per-sample threads (split and thread filter work). */
  threads: boolean;
  /** The profile has sample times (the range works). */
  time: boolean;
}

const BOOL: Record<string, boolean> = { '1': true, '0': false, true: true, false: false };

/**
 * Parses a location hash (with or without `#`) over `base` (the page's own
 * preset view). Unknown keys and values that do not parse are not guessed
 * at: they are left out and listed in `ignored` with the reason, so the
 * page can say what of the link it could not use.
 */
export function decodeView(hash: string, base: FlameView = defaultView()): { view: FlameView; ignored: string[] } {
  const view: FlameView = { ...base, zoom: [...base.zoom] };
  const ignored: string[] = [];
  const text = hash.startsWith('#') ? hash.slice(1) : hash;
  if (text === '') return { view, ignored };
  const params = new URLSearchParams(text);
  const zoom: string[] = [];
  const bad = (k: string, v: string, why: string): void => {
    ignored.push(`${k}=${v}: ${why}`);
  };
  const bool = (k: string, v: string): boolean | null => {
    const b = BOOL[v];
    if (b === undefined) {
      bad(k, v, 'expected 1 or 0');
      return null;
    }
    return b;
  };
  const seconds = (k: string, v: string): number | null | undefined => {
    if (v === '') return null;
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) {
      bad(k, v, 'expected seconds >= 0');
      return undefined;
    }
    return n;
  };
  for (const [k, v] of params) {
    switch (k) {
      case 'z':
        zoom.push(v);
        break;
      case 'q':
        view.search = v;
        break;
      case 'hide':
        view.hide = v;
        break;
      case 'focus':
        view.focus = v === '' ? null : v;
        break;
      case 'fn':
        view.fn = v === '' ? null : v;
        break;
      case 'mode':
        if ((FLAME_MODES as readonly string[]).includes(v)) view.mode = v as FlameMode;
        else bad(k, v, `expected one of ${FLAME_MODES.join(', ')}`);
        break;
      case 'view':
        if (v === 'flame' || v === 'sandwich') view.panel = v;
        else bad(k, v, 'expected flame or sandwich');
        break;
      case 'split':
        if (v === 'merge' || v === 'process' || v === 'thread') view.split = v;
        else bad(k, v, 'expected merge, process or thread');
        break;
      case 'threads':
        if (v === 'all' || /^p:-?\d+$/.test(v) || /^t:\d+$/.test(v)) view.threads = v;
        else bad(k, v, 'expected all, p:PID or t:INDEX');
        break;
      case 'invert':
      case 'icicle':
      case 'idle': {
        const b = bool(k, v);
        if (b !== null) view[k] = b;
        break;
      }
      case 'from':
      case 'to': {
        const s = seconds(k, v);
        if (s !== undefined) view[k] = s;
        break;
      }
      default:
        bad(k, v, 'not a view setting');
    }
  }
  if (zoom.length) view.zoom = zoom;
  if (view.panel === 'sandwich' && view.fn === null) {
    ignored.push('view=sandwich: no function (fn=) to show');
    view.panel = 'flame';
  }
  return { view, ignored };
}

/**
 * The hash for a view: only what differs from `base`, in a fixed order, so
 * equal views give equal links. "" when the view is the base.
 */
export function encodeView(view: FlameView, base: FlameView = defaultView()): string {
  const p = new URLSearchParams();
  if (view.panel !== base.panel) p.append('view', view.panel);
  if (view.mode !== base.mode) p.append('mode', view.mode);
  if (view.fn !== base.fn) p.append('fn', view.fn ?? '');
  if (view.focus !== base.focus) p.append('focus', view.focus ?? '');
  if (view.search !== base.search) p.append('q', view.search);
  if (view.hide !== base.hide) p.append('hide', view.hide);
  for (const k of ['invert', 'icicle', 'idle'] as const) if (view[k] !== base[k]) p.append(k, view[k] ? '1' : '0');
  if (view.split !== base.split) p.append('split', view.split);
  if (view.threads !== base.threads) p.append('threads', view.threads);
  for (const k of ['from', 'to'] as const) if (view[k] !== base[k]) p.append(k, view[k] === null ? '' : String(view[k]));
  if (view.zoom.join('\u0000') !== base.zoom.join('\u0000')) for (const z of view.zoom) p.append('z', z);
  const s = p.toString();
  return s === '' ? '' : `#${s}`;
}

/**
 * Drops what the profile cannot show (time order without timestamps, a
 * thread filter without threads), each with its reason in `ignored`.
 */
export function fitView(view: FlameView, caps: ViewCaps): { view: FlameView; ignored: string[] } {
  const out: FlameView = { ...view, zoom: [...view.zoom] };
  const ignored: string[] = [];
  if (out.mode === 'time-order' && caps.timeOrder) {
    ignored.push(`mode=time-order: ${caps.timeOrder}`);
    out.mode = 'merged';
  }
  if (!caps.threads) {
    if (out.threads !== 'all') ignored.push(`threads=${out.threads}: this profile has no thread information`);
    if (out.split !== 'merge') ignored.push(`split=${out.split}: this profile has no thread information`);
    out.threads = 'all';
    out.split = 'merge';
  }
  if (!caps.time && (out.from !== null || out.to !== null)) {
    ignored.push('from/to: this profile has no sample times');
    out.from = null;
    out.to = null;
  }
  return { view: out, ignored };
}

/** The mode after `m` when cycling with the `m` key, skipping unavailable ones. */
export function nextMode(m: FlameMode, caps: Pick<ViewCaps, 'timeOrder'>): FlameMode {
  const avail = FLAME_MODES.filter((x) => x !== 'time-order' || !caps.timeOrder);
  return avail[(avail.indexOf(m) + 1) % avail.length];
}
