/** Value formatting by unit, for axes and tooltips. */

const BIN = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
const SI = ['', 'k', 'M', 'G', 'T'];

function trim(x: number, digits: number): string {
  const s = x.toFixed(digits);
  return s.includes('.') ? s.replace(/\.?0+$/, '') : s;
}

/** Decimals that leave `sig` significant digits in `x` (none past the point for large x). */
function decimals(x: number, sig: number): number {
  const a = Math.abs(x);
  if (a === 0) return 0;
  return Math.max(0, Math.min(6, sig - 1 - Math.floor(Math.log10(a))));
}

/** True for units that count bytes ("bytes", "bytes/s", "B"). */
export function isBytes(unit: string): boolean {
  return /^(bytes?|B)(\/s)?$/i.test(unit.trim());
}

/**
 * A value with its unit, scaled to stay short: 1.5 MiB/s, 12.3 k req/s,
 * 87.5%, 1.25 s.
 */
export function fmtValue(v: number | null | undefined, unit: string, precise = false): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—';
  const u = unit.trim();
  const digits = precise ? 3 : 1;
  if (u === 'ms') {
    // Precision by magnitude: three significant digits (four when
    // precise), so 1.06 s, 212 ms, 3.4 ms, never 1.0598 s.
    const sig = precise ? 4 : 3;
    if (Math.abs(v) >= 1000) return `${trim(v / 1000, decimals(v / 1000, sig))} s`;
    if (Math.abs(v) >= 1 || v === 0) return `${trim(v, decimals(v, sig))} ms`;
    return `${trim(v * 1000, decimals(v * 1000, sig))} µs`;
  }
  if (u === '%') return `${trim(v, precise ? 2 : 1)}%`;
  if (isBytes(u)) {
    const rate = u.endsWith('/s') ? '/s' : '';
    let x = Math.abs(v);
    let i = 0;
    while (x >= 1024 && i < BIN.length - 1) {
      x /= 1024;
      i++;
    }
    return `${v < 0 ? '-' : ''}${trim(x, i === 0 ? 0 : digits)} ${BIN[i]}${rate}`;
  }
  let x = Math.abs(v);
  let i = 0;
  while (x >= 1000 && i < SI.length - 1) {
    x /= 1000;
    i++;
  }
  const num = `${v < 0 ? '-' : ''}${trim(x, i === 0 && Number.isInteger(v) ? 0 : precise ? 3 : i === 0 && x < 10 ? 2 : 1)}`;
  const prefix = SI[i];
  if (!u) return `${num}${prefix}`;
  return prefix ? `${num} ${prefix}${u.startsWith('/') ? '' : ' '}${u}`.replace('  ', ' ') : `${num} ${u}`;
}

/** Axis label for a unit: what the numbers on the axis mean. */
export function axisLabel(unit: string): string {
  const u = unit.trim();
  if (!u) return 'count';
  if (u === 'bytes' || u === 'B') return 'bytes';
  // A bare rate reads better spelled out on an axis.
  if (u === '/s') return 'per second';
  return u;
}

/**
 * A tick on an axis titled by `axisLabel(unit)`: milliseconds stay in ms
 * (1,500 on an axis titled "ms", never "1.5 s" under "ms"); bytes and %
 * carry their unit; other counts are shortened (12k).
 */
export function fmtTick(v: number, unit: string): string {
  const u = unit.trim();
  if (u === 'ms') return Math.abs(v) >= 1000 ? Math.round(v).toLocaleString('en-US') : trim(v, decimals(v, 3));
  return fmtValue(v, isBytes(u) || u === '%' ? u : '');
}
