/**
 * The flame page's keys and mouse actions: one table that both the key
 * handler and the `?` help overlay read, so the help cannot list a key
 * that does nothing or miss one that does something.
 */

/** What a key does on the flame page. */
export type FlameAction = 'search' | 'reset' | 'help' | 'copy' | 'sandwich' | 'mode' | 'back' | 'icicle';

/** One row of the help overlay. */
export interface KeyHelp {
  /** Key as shown ("?", "Esc", "c"). */
  key: string;
  /** Action run by the key, or null for a mouse gesture (listed, not handled here). */
  action: FlameAction | null;
  what: string;
}

/** Every key and gesture, in the order the help lists them. */
export const FLAME_KEYS: readonly KeyHelp[] = [
  { key: '/', action: 'search', what: 'search frames (regular expression; /re/i for flags)' },
  { key: 'Esc', action: 'reset', what: 'close help or menu; else reset zoom, search and focus' },
  { key: 'b', action: 'back', what: 'zoom back to the previous view' },
  { key: 'm', action: 'mode', what: 'next mode: merged, left heavy, time order' },
  { key: 'i', action: 'icicle', what: 'icicle: root at the top / bottom' },
  { key: 's', action: 'sandwich', what: 'sandwich of the function under the pointer (or the selected one); again: back to the flame graph' },
  { key: 'c', action: 'copy', what: 'copy the name of the frame under the pointer (else the zoomed frame)' },
  { key: '?', action: 'help', what: 'show or hide this help' },
  { key: 'click', action: null, what: 'zoom into a frame; select its function in the table' },
  { key: 'shift+click', action: null, what: 'focus: only stacks through that function, merged' },
  { key: 'right click', action: null, what: 'frame menu: copy name, sandwich, focus, zoom' },
];

/** The subset of a KeyboardEvent the mapping reads. */
export interface KeyLike {
  key: string;
  ctrlKey: boolean;
  metaKey: boolean;
  altKey: boolean;
}

/**
 * The action for a key press, or null. Keys with Ctrl/Meta/Alt belong to
 * the browser (copy, find), and while typing in a field only Esc acts, so
 * a search regex may contain any of these letters.
 */
export function keyAction(ev: KeyLike, typing: boolean): FlameAction | null {
  if (ev.key === 'Escape') return 'reset';
  if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) return null;
  const row = FLAME_KEYS.find((k) => k.action !== null && k.key === ev.key);
  return row ? row.action : null;
}
