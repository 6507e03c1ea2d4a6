#!/usr/bin/env bash
# Builds alp v1.0.21 (the peer `keisoku logs` is checked against) into
# bench/tools/alp from a scratch Go module: the module proxy here refuses
# `go install ...@latest`, but resolving a pinned requirement works.
# Idempotent: an existing bench/tools/alp of the right version is kept.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tools="$here/../tools"
mkdir -p "$tools"
if [[ -x "$tools/alp" ]] && "$tools/alp" --version 2>&1 | grep -q '1.0.21'; then
  echo "alp: $tools/alp (cached)"
  exit 0
fi
command -v go >/dev/null || { echo "alp build: go is not installed (apt-get install golang-go)" >&2; exit 1; }
cd "$here"
export GOFLAGS=-mod=mod
go mod tidy
go build -o "$tools/alp" github.com/tkuchiki/alp/cmd/alp
"$tools/alp" --version
echo "alp: $tools/alp"
