#!/bin/sh
# Starts the Express BFF at 127.0.0.1:PORT and its recommendation backend at PORT+1.
#   MODE=naive|tuned  CAUSES=json,intl,di,single,nokeepalive (naive only)  ACCESS_LOG=FILE (LTSV)
# Prints "node-bff listening on PORT" when every worker listens.
set -eu
PORT=${1:?usage: start.sh PORT}
HERE=$(cd "$(dirname "$0")" && pwd)
"$HERE/install.sh"
MODE=${MODE:-naive}
case "$MODE" in naive|tuned) ;; *) echo "node-bff: MODE must be naive or tuned, not $MODE" >&2; exit 2 ;; esac
BACKEND_PORT=$((PORT + 1))
ACCESS_LOG=${ACCESS_LOG:-/tmp/keisoku-corpus/node-bff-$PORT.log}
mkdir -p "$(dirname "$ACCESS_LOG")"
# The backend runs outside this process tree (a detached session), so only the BFF is profiled.
"$HERE/../start-backend.sh" "$BACKEND_PORT" $$ node "$HERE/backend.js"
export MODE CAUSES="${CAUSES:-}" ACCESS_LOG BACKEND_PORT NODE_ENV=production
exec node --perf-basic-prof "$HERE/server.js" "$PORT"
