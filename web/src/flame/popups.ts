/**
 * The flame page's small popups: the frame menu (right click), the key
 * help overlay (`?`), a short notice after an action ("copied"), and
 * copying text to the clipboard.
 */
import { h, clear } from '../common/dom';
import { FLAME_KEYS } from './keys';

/**
 * Copies text to the clipboard: the async Clipboard API where the page may
 * use it, else a selected textarea and `execCommand('copy')` (file:// pages
 * in some browsers). Resolves to whether either worked.
 */
export async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard && typeof navigator.clipboard.writeText === 'function') {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // Denied or unavailable: the fallback below may still work.
  }
  const ta = h('textarea', { class: 'ks-copy-buffer', 'aria-hidden': 'true' });
  ta.value = text;
  document.body.append(ta);
  ta.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  ta.remove();
  return ok;
}

let toastEl: HTMLElement | null = null;
let toastTimer = 0;

/** Shows a one-line notice at the bottom of the window for a moment. */
export function toast(text: string): void {
  if (!toastEl) {
    toastEl = h('div', { class: 'ks-toast', role: 'status', 'aria-live': 'polite' });
    document.body.append(toastEl);
  }
  toastEl.textContent = text;
  toastEl.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = window.setTimeout(() => {
    if (toastEl) toastEl.hidden = true;
  }, 2500);
}

/** One entry of the frame menu. */
export interface MenuItem {
  label: string;
  /** Key that does the same, shown at the right. */
  key?: string;
  run: () => void;
}

/** The frame menu: one per page, closed by Esc, a click elsewhere or scrolling. */
export class FrameMenu {
  private readonly el: HTMLElement;

  constructor() {
    this.el = h('div', { class: 'ks-menu', role: 'menu' });
    this.el.hidden = true;
    document.body.append(this.el);
    document.addEventListener('mousedown', (e) => {
      if (!this.el.hidden && !this.el.contains(e.target as Node)) this.close();
    });
    window.addEventListener('scroll', () => this.close(), { passive: true });
  }

  get isOpen(): boolean {
    return !this.el.hidden;
  }

  /** Opens at a window position with a title line (the frame's name). */
  open(title: string, items: MenuItem[], clientX: number, clientY: number): void {
    clear(this.el);
    this.el.append(h('div', { class: 'ks-menu-title', text: title, title }));
    for (const it of items) {
      const b = h('button', { type: 'button', role: 'menuitem', class: 'ks-menu-item' }, h('span', { text: it.label }), it.key ? h('kbd', { text: it.key }) : null);
      b.addEventListener('click', () => {
        this.close();
        it.run();
      });
      this.el.append(b);
    }
    this.el.hidden = false;
    const w = this.el.offsetWidth;
    const hgt = this.el.offsetHeight;
    this.el.style.left = `${Math.max(4, Math.min(clientX, window.innerWidth - w - 4))}px`;
    this.el.style.top = `${Math.max(4, Math.min(clientY, window.innerHeight - hgt - 4))}px`;
    (this.el.querySelector('.ks-menu-item') as HTMLElement | null)?.focus();
  }

  close(): void {
    this.el.hidden = true;
  }
}

/** The `?` overlay: every key and gesture of FLAME_KEYS. */
export class HelpOverlay {
  private readonly el: HTMLElement;

  constructor() {
    const rows = FLAME_KEYS.map((k) => h('tr', {}, h('td', {}, h('kbd', { text: k.key })), h('td', { text: k.what })));
    const close = h('button', { type: 'button', class: 'ks-help-close', text: '✕', 'aria-label': 'close help' });
    close.addEventListener('click', () => this.close());
    this.el = h('div', { class: 'ks-help', role: 'dialog', 'aria-label': 'keyboard help' },
      h('div', { class: 'ks-help-box' }, h('h2', {}, 'Keys and mouse ', close), h('table', { class: 'ks-help-keys' }, h('tbody', {}, ...rows))),
    );
    this.el.hidden = true;
    this.el.addEventListener('mousedown', (e) => {
      if (e.target === this.el) this.close();
    });
    document.body.append(this.el);
  }

  get isOpen(): boolean {
    return !this.el.hidden;
  }

  toggle(): void {
    this.el.hidden = !this.el.hidden;
  }

  close(): void {
    this.el.hidden = true;
  }
}
