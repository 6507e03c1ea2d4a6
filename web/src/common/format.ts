/** Number and text formatting shared by every keisoku page. */

/** A count with thousands separators: 1234567 -> "1,234,567". Fractions keep 2 digits. */
export function fmtCount(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const r = Math.round(n);
  if (Math.abs(n - r) < 1e-9) return r.toLocaleString('en-US');
  return n.toLocaleString('en-US', { maximumFractionDigits: 2 });
}

/** A share as a percentage with precision that suits its size. */
export function fmtPct(part: number, whole: number): string {
  if (!(whole > 0)) return '0%';
  return fmtShare(part / whole);
}

/** A fraction 0..1 as a percentage. */
export function fmtShare(f: number): string {
  const p = f * 100;
  if (p === 0) return '0%';
  const a = Math.abs(p);
  if (a >= 10) return `${p.toFixed(1)}%`;
  if (a >= 0.1) return `${p.toFixed(2)}%`;
  return `${p.toFixed(3)}%`;
}

/** A signed percentage change such as "+12.5%". */
export function fmtSignedPct(p: number): string {
  const s = p > 0 ? '+' : '';
  if (!Number.isFinite(p)) return p > 0 ? '+∞' : p < 0 ? '−∞' : 'n/a';
  return `${s}${p.toFixed(Math.abs(p) >= 10 ? 1 : 2)}%`;
}

/** Milliseconds in the largest readable unit. */
export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return '—';
  if (ms === 0) return '0 ms';
  if (ms >= 1000) return `${(ms / 1000).toFixed(ms >= 10000 ? 1 : 3)} s`;
  if (ms >= 1) return `${ms.toFixed(1)} ms`;
  return `${(ms * 1000).toFixed(0)} µs`;
}

/** A weight in the profile's unit: "samples", "nanoseconds" or "bytes". */
export function fmtWeight(w: number, unit: string): string {
  switch (unit) {
    case 'nanoseconds':
      return fmtMs(w / 1e6);
    case 'bytes': {
      const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
      let v = w;
      let i = 0;
      while (Math.abs(v) >= 1024 && i < units.length - 1) {
        v /= 1024;
        i++;
      }
      return `${i === 0 ? fmtCount(v) : v.toFixed(1)} ${units[i]}`;
    }
    default:
      return `${fmtCount(w)} ${Math.abs(w) === 1 ? 'sample' : 'samples'}`;
  }
}

/**
 * Milliseconds as seconds with every digit that matters (up to µs), for
 * range labels that must match `keisoku flame --from/--to`: 12340 ->
 * "12.34 s", never rounded to "12.3 s".
 */
export function fmtSecondsExact(ms: number): string {
  if (!Number.isFinite(ms)) return '—';
  return `${+(ms / 1000).toFixed(6)} s`;
}
