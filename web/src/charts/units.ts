/** Value formatting by unit, for axes and tooltips. */

const BIN = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
const SI = ['', 'k', 'M', 'G', 'T'];

function trim(x: number, digits: number): string {
  const s = x.toFixed(digits);
  return s.includes('.') ? s.replace(/\.?0+$/, '') : s;
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
    if (Math.abs(v) >= 1000) return `${trim(v / 1000, precise ? 4 : 2)} s`;
    if (Math.abs(v) >= 1 || v === 0) return `${trim(v, precise ? 3 : Math.abs(v) >= 100 ? 0 : 1)} ms`;
    return `${trim(v * 1000, precise ? 1 : 0)} µs`;
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
