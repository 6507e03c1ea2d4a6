#!/usr/bin/env bash
# The whole test suite: lint, type check, unit, end-to-end and browser tests.
# This is the README's second command and exactly what CI runs (.ci/run).
#
# scripts/test.sh --fast: the tier for your own loop (a few minutes): fmt,
# clippy, the TypeScript type check, unit tests and the in-process tests of
# the libraries; no servers, no browser, no end-to-end test of the binary.
set -euo pipefail
cd "$(dirname "$0")/.."

fast=false
case "${1:-}" in
  --fast) fast=true ;;
  "") ;;
  *) echo "usage: scripts/test.sh [--fast]" >&2; exit 2 ;;
esac

if $fast; then
  echo "== cargo fmt" >&2
  cargo fmt --all -- --check
  echo "== cargo clippy" >&2
  cargo clippy --workspace --all-targets --quiet -- -D warnings
  if [[ -d web/node_modules ]]; then
    echo "== TypeScript type check" >&2
    (cd web && npx tsc --noEmit -p .)
  fi
  echo "== unit and in-process tests" >&2
  # Unit tests of every crate, and the libraries' own test files that read
  # files and fixtures only (no perf, no servers, no browser).
  cargo test --workspace --lib --bins --quiet
  cargo test --quiet -p keisoku-stacks --test diffs --test properties
  cargo test --quiet -p keisoku-logs --test properties
  cargo test --quiet -p keisoku-findings --test rules
  cargo test --quiet -p keisoku-probe --test fake_proc --test sampler_threads
  cargo test --quiet -p keisoku-store --test store
  exit 0
fi

scripts/setup.sh

echo "== cargo fmt" >&2
cargo fmt --all -- --check
echo "== cargo clippy" >&2
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "== TypeScript type check" >&2
(cd web && npx tsc --noEmit -p .)
echo "== fuzz targets build (running them is scripts/fuzz.sh)" >&2
# Its own workspace (libFuzzer's flags), so the workspace commands above
# never see it; a reader whose signature changed breaks it here, not at the
# next fuzzing campaign.
cargo check --manifest-path fuzz/Cargo.toml --bins --quiet
echo "== cargo test" >&2
cargo test --workspace
echo "== fault suite (kill -9, full disk, signals, taken port)" >&2
scripts/faults.sh
echo "== browser tests (headless Chromium)" >&2
shopt -s nullglob
browser_tests=(web/tests/*.test.mjs)
if ((${#browser_tests[@]})); then
  KEISOKU_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/keisoku" node --test --test-concurrency=1 "${browser_tests[@]}"
fi
