#!/usr/bin/env bash
# Time to first paint of a 1,000,000-sample flame graph page in headless
# Chromium (goal: < 1 s), side by side with inferno's SVG of the same folded
# stacks in the same browser (goal: not slower), and the flame page's views
# (left heavy, sandwich, time order) on the full tree. Runs both data forms,
# alternating, and prints one JSON line per form. Needs cargo, node, web/node_modules and chromium
# (scripts/setup.sh installs them). Usage: bench/flame-paint.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
[ -d web/node_modules/playwright-core ] || (cd web && npm ci --no-audit --no-fund)
command -v chromium >/dev/null || { echo "flame-paint: chromium is missing; run scripts/setup.sh" >&2; exit 1; }
# The example that embeds profile JSON exactly as `keisoku flame` does.
target="${CARGO_TARGET_DIR:-target}"
cargo build --quiet -p keisoku-report --example profile_page
export KEISOKU_PAGE_TOOL="$PWD/$target/debug/examples/profile_page"
case "$target" in /*) KEISOKU_PAGE_TOOL="$target/debug/examples/profile_page" ;; esac
# The peer: inferno's SVG of the same folded stacks (as bench/stacks.sh installs it).
if ! command -v inferno-flamegraph >/dev/null && [ ! -x bench/tools/bin/inferno-flamegraph ]; then
  cargo install --quiet inferno --root "$PWD/bench/tools"
fi
echo "machine: $(nproc) cpus, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" >&2
for form in samples counts; do
  node bench/flame-paint.mjs --form "$form" --runs "$runs"
done
node bench/flame-paint.mjs --page scope --form samples --runs "$runs"
if [ -n "${KEISOKU_BIN:-}" ] && "$KEISOKU_BIN" flame --help >/dev/null 2>&1; then
  node bench/flame-paint.mjs --via binary --runs "$runs"
fi
