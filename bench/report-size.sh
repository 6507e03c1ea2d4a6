#!/usr/bin/env bash
# Size and first paint of a large run report (see bench/report-size.mjs).
# Usage: bench/report-size.sh [KEISOKU_BIN] [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-${KEISOKU_BIN:-target/release/keisoku}}"
if [[ ! -x "$bin" ]]; then
  echo "building $bin" >&2
  cargo build --release -p keisoku >&2
  bin=target/release/keisoku
fi
command -v chromium >/dev/null || { echo "chromium missing: run scripts/setup.sh" >&2; exit 1; }
[[ -d web/node_modules/playwright-core ]] || (cd web && npm ci --no-audit --no-fund)
echo "machine: $(nproc) cores, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')" >&2
node bench/report-size.mjs "$bin" "${2:-3}"
