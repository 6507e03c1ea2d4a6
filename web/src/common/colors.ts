/**
 * Colours for frames, diffs and heat maps. Frame colours are stable: a
 * function gets the same colour in every graph and every run because it is
 * derived from its kind, module and name, never from its position.
 */

/** FNV-1a hash of a string, 32-bit: cheap and well spread for colour picks. */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Hue ranges per frame kind, chosen to read like flamegraph.pl's palettes. */
const KIND_HUES: Record<string, [number, number]> = {
  native: [0, 40], // warm red-orange, flamegraph.pl's default "hot"
  kernel: [40, 60], // orange-yellow, like --color=java's kernel frames
  jit: [90, 140], // green, like JIT frames in --color=java
  interpreted: [180, 210], // aqua
  inlined: [150, 175], // teal-green
  unknown: [0, 0], // grey (saturation 0)
};

/** A label and swatch for each kind, for legends. */
export const KIND_LABELS: Record<string, string> = {
  native: 'native (C/C++/Rust/Go)',
  kernel: 'kernel',
  jit: 'JIT',
  interpreted: 'interpreted',
  inlined: 'inlined',
  unknown: 'unknown',
};

/**
 * The fill colour of a frame. The module picks the hue inside the kind's
 * range (so one library's frames look alike); the name varies lightness a
 * little so neighbours stay distinguishable.
 */
export function frameColor(kind: string, module: string, name: string, dark: boolean): string {
  const range = KIND_HUES[kind] ?? KIND_HUES.unknown;
  const hm = hashString(module || name);
  const hn = hashString(name);
  const hue = range[0] + (hm % 1000) / 1000 * (range[1] - range[0]);
  const sat = kind === 'unknown' || !(kind in KIND_HUES) ? 0 : 65 + (hm >>> 10) % 20;
  const light = (dark ? 38 : 62) + ((hn % 100) / 100) * 12 - 6;
  return `hsl(${hue.toFixed(1)},${sat}%,${light.toFixed(1)}%)`;
}

/** Swatch colour for a kind in a legend. */
export function kindSwatch(kind: string, dark: boolean): string {
  const range = KIND_HUES[kind] ?? KIND_HUES.unknown;
  const sat = kind === 'unknown' || !(kind in KIND_HUES) ? 0 : 72;
  return `hsl(${(range[0] + range[1]) / 2},${sat}%,${dark ? 40 : 60}%)`;
}

/**
 * Differential colour: red when a frame grew, blue when it shrank, more
 * saturated the larger the change relative to `maxAbs`. Near-zero changes
 * are almost white (light theme) or grey (dark theme), as in difffolded.pl.
 */
export function diffColor(delta: number, maxAbs: number, dark: boolean): string {
  const f = maxAbs > 0 ? Math.min(1, Math.abs(delta) / maxAbs) : 0;
  // A floor makes any real change visible; sqrt spreads small changes.
  const s = delta === 0 ? 0 : 0.15 + 0.85 * Math.sqrt(f);
  if (dark) {
    const base = 70;
    const r = delta > 0 ? base + s * 160 : base - s * 40;
    const b = delta < 0 ? base + s * 160 : base - s * 40;
    const g = base - s * 40;
    return `rgb(${r | 0},${g | 0},${b | 0})`;
  }
  const high = 245;
  const low = Math.round(high - s * 190);
  return delta > 0 ? `rgb(${high},${low},${low})` : delta < 0 ? `rgb(${low},${low},${high})` : "rgb(228,228,224)";
}

/**
 * Heat-map colour for a cell holding `v` of at most `max` samples: empty
 * cells blend into the background; FlameScope-like white→orange→red on a
 * square-root scale.
 */
export function heatColor(v: number, max: number, dark: boolean): string {
  if (v <= 0 || max <= 0) return dark ? '#1c1c1f' : '#f6f6f6';
  // Square root: one burst must not wash every ordinary second out to white.
  const f = Math.sqrt(Math.min(1, v / max));
  const l = dark ? 22 + f * 38 : 90 - f * 50;
  const hue = 50 - f * 50; // yellow -> red
  return `hsl(${hue.toFixed(1)},${(70 + f * 25).toFixed(0)}%,${l.toFixed(1)}%)`;
}
