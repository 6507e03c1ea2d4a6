/** Light/dark theme following the system setting (prefers-color-scheme). */

const query = typeof matchMedia === 'function' ? matchMedia('(prefers-color-scheme: dark)') : null;

/** True when the system asks for a dark theme. */
export function isDark(): boolean {
  return query?.matches ?? false;
}

/** Calls `fn` whenever the system theme changes (canvases must redraw). */
export function onThemeChange(fn: () => void): void {
  query?.addEventListener('change', fn);
}

/** The resolved value of a CSS custom property on the document root. */
export function cssVar(name: string, fallback: string): string {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}
