#!/usr/bin/env bash
# Builds alp v1.0.21 (the peer `keisoku logs` is checked against) into
# bench/tools/alp from a scratch Go module: the module proxy here refuses
# `go install ...@latest`, but resolving a pinned requirement works.
# Idempotent: an existing bench/tools/alp of the right version is kept.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tools="$here/../tools"
mkdir -p "$tools"
# alp has no --version flag; a stamp file records what was built.
if [[ -x "$tools/alp" ]] && [[ "$(cat "$tools/alp.version" 2>/dev/null)" == v1.0.21 ]]; then
  echo "alp: $tools/alp (cached)"
  exit 0
fi
[[ -x /usr/local/go/bin/go ]] && PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "alp build: go is not installed (apt-get install golang-go)" >&2; exit 1; }
cd "$here"
export GOFLAGS=-mod=mod
go mod tidy
go build -o "$tools/alp" github.com/tkuchiki/alp/cmd/alp
"$tools/alp" --help >/dev/null
echo v1.0.21 >"$tools/alp.version"
echo "alp: $tools/alp (built)"
