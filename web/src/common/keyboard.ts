/** Page-wide keyboard shortcuts shared by the profile pages. */

export interface KeyActions {
  /** `/`: focus the search box. */
  search?: () => void;
  /** `Esc`: reset zoom, search and selection. */
  reset?: () => void;
}

/**
 * Installs `/` and `Esc`. `/` is ignored while typing in a field so a
 * regex may contain it; `Esc` in a field blurs it and also resets.
 */
export function installKeys(actions: KeyActions): void {
  document.addEventListener('keydown', (ev) => {
    const t = ev.target as HTMLElement | null;
    const typing = !!t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT');
    if (ev.key === '/' && !typing && !ev.ctrlKey && !ev.metaKey && !ev.altKey) {
      ev.preventDefault();
      actions.search?.();
    } else if (ev.key === 'Escape') {
      if (typing) t?.blur();
      actions.reset?.();
    }
  });
}
