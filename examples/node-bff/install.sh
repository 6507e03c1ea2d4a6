#!/bin/sh
# Installs Express from npm (package-lock.json) when missing; quiet when already installed.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
if [ ! -d "$HERE/node_modules/express" ]; then
  (cd "$HERE" && npm ci --silent --no-audit --no-fund) >&2
fi
