/** Tiny DOM helpers: the pages build their UI without a framework. */

type Attrs = Record<string, string | number | boolean | undefined | EventListener>;

/**
 * Creates an element. Attributes starting with "on" become listeners;
 * `class`/`text` are shortcuts; children may be strings or nodes.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Node | string | null | undefined)[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2), v as EventListener);
    } else if (k === 'class') {
      el.className = String(v);
    } else if (k === 'text') {
      el.textContent = String(v);
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    el.append(c);
  }
  return el;
}

/** Removes every child of an element. */
export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

/** Reads the JSON a page was generated with (see crates/report/src/assets.rs). */
export function pageData<T>(): T {
  const el = document.getElementById('keisoku-data');
  if (!el || !el.textContent) throw new Error('this page has no embedded data');
  return JSON.parse(el.textContent) as T;
}

/** Shows a fatal error in place of the page instead of a blank screen. */
export function showFatal(app: HTMLElement, err: unknown): void {
  clear(app);
  app.append(h('div', { class: 'ks-fatal', role: 'alert', text: `keisoku: ${String(err instanceof Error ? err.message : err)}` }));
}
