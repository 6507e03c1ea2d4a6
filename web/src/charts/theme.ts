/** Chart colours that read on both light and dark backgrounds. */
import { cssVar, isDark } from '../common/theme';

/** Line colours, in order; chosen to stay distinct for colour-blind readers. */
const LIGHT = ['#1f6fb4', '#d9480f', '#2b8a3e', '#862e9c', '#c2255c', '#0b7285', '#a67c00', '#495057'];
const DARK = ['#6cb4ff', '#ff8c5a', '#69db7c', '#d0a2f7', '#ff8fb1', '#66d9e8', '#ffd43b', '#ced4da'];

/** The i-th series colour for the current theme. */
export function seriesColor(i: number): string {
  const p = isDark() ? DARK : LIGHT;
  return p[i % p.length];
}

/** Axis, grid and text colours for the current theme. */
export function axisColors(): { stroke: string; grid: string; text: string } {
  return {
    stroke: cssVar('--ks-muted', isDark() ? '#9a9aa2' : '#6b6b70'),
    grid: cssVar('--ks-border', isDark() ? '#3a3a40' : '#d8d8dc'),
    text: cssVar('--ks-fg', isDark() ? '#e8e8ea' : '#1d1d1f'),
  };
}

/** Colour of a 0..1 utilisation cell in a heat strip (light: white→red, dark: black→orange). */
export function utilColor(f: number): string {
  const x = Math.max(0, Math.min(1, f));
  if (isDark()) {
    const l = 12 + x * 48;
    return `hsl(${(40 - x * 35).toFixed(0)},${(55 + x * 40).toFixed(0)}%,${l.toFixed(1)}%)`;
  }
  const l = 97 - x * 52;
  return `hsl(${(48 - x * 46).toFixed(0)},${(60 + x * 35).toFixed(0)}%,${l.toFixed(1)}%)`;
}
