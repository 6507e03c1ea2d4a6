#!/usr/bin/env bash
# flamegraph-parity.sh: `keisoku collapse perf` against the CURRENT
# stackcollapse-perf.pl on FlameGraph's own test inputs, with the six option
# sets of FlameGraph's test.sh (--pid --tid --kernel --jit --all --addrs).
#
# FlameGraph is not vendored (no third-party code or data in this tree) and
# GitHub is not reachable from CI, so the caller points at a checkout:
#
#   FLAMEGRAPH_DIR=/path/to/FlameGraph scripts/flamegraph-parity.sh
#
# KEISOKU (default: target/debug/keisoku, else `keisoku` on PATH) is the
# binary under test. Prints one line per differing case and a summary
# naming the FlameGraph commit when it is a git checkout; exits 1 if any
# case differs, 2 if the set-up is missing.
set -euo pipefail

fg=${FLAMEGRAPH_DIR:?set FLAMEGRAPH_DIR to a FlameGraph checkout}
[ -f "$fg/stackcollapse-perf.pl" ] || { echo "no stackcollapse-perf.pl in $fg" >&2; exit 2; }
command -v perl >/dev/null || { echo "perl is needed" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${KEISOKU:-${CARGO_TARGET_DIR:-$root/target}/debug/keisoku}
[ -x "$bin" ] || bin=$(command -v keisoku) || { echo "no keisoku binary (set KEISOKU)" >&2; exit 2; }

commit=unknown
if git -C "$fg" rev-parse --short HEAD >/dev/null 2>&1; then
  commit=$(git -C "$fg" rev-parse --short HEAD)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cases=0 differ=0
for opt in pid tid kernel jit all addrs; do
  for input in "$fg"/test/*.txt; do
    cases=$((cases + 1))
    perl "$fg/stackcollapse-perf.pl" --"$opt" "$input" >"$work/perl" 2>/dev/null
    "$bin" collapse perf --"$opt" "$input" >"$work/keisoku" 2>/dev/null || true
    if ! cmp -s "$work/perl" "$work/keisoku"; then
      differ=$((differ + 1))
      echo "DIFFERS: --$opt $(basename "$input") ($(diff "$work/perl" "$work/keisoku" | grep -c '^[<>]') lines)"
    fi
  done
done
echo "stackcollapse-perf.pl $commit: $cases cases, $differ differ"
[ "$differ" -eq 0 ]
