#!/usr/bin/env bash
# The whole test suite: lint, type check, unit, end-to-end and browser tests.
# This is the README's second command and exactly what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh

echo "== cargo fmt" >&2
cargo fmt --all -- --check
echo "== cargo clippy" >&2
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "== TypeScript type check" >&2
(cd web && npx tsc --noEmit -p .)
echo "== cargo test" >&2
cargo test --workspace
echo "== browser tests (headless Chromium)" >&2
shopt -s nullglob
browser_tests=(web/tests/*.test.mjs)
if ((${#browser_tests[@]})); then
  KEISOKU_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/keisoku" node --test --test-concurrency=1 "${browser_tests[@]}"
fi
