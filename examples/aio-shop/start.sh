#!/bin/sh
# Starts the aiohttp shop at 127.0.0.1:PORT, one event loop per core (the audit
# logger, flask-shop's backend.py, on PORT+1 outside the shop's process tree).
#   MODE=naive|tuned   CAUSES=blocking (naive only)   ACCESS_LOG=FILE (LTSV)
# Prints "aio-shop listening on PORT" once it accepts connections.
set -eu
PORT=${1:?usage: start.sh PORT}
HERE=$(cd "$(dirname "$0")" && pwd)
"$HERE/install.sh"
MODE=${MODE:-naive}
case "$MODE" in naive|tuned) ;; *) echo "aio-shop: MODE must be naive or tuned, not $MODE" >&2; exit 2 ;; esac
BACKEND_PORT=$((PORT + 1))
ACCESS_LOG=${ACCESS_LOG:-/tmp/keisoku-corpus/aio-shop-$PORT.log}
mkdir -p "$(dirname "$ACCESS_LOG")"
"$HERE/../start-backend.sh" "$BACKEND_PORT" $$ python3 "$HERE/../flask-shop/backend.py"
# One event loop (process) per core in both modes: the planted cause is the blocking call.
WORKERS=$(nproc)
export MODE CAUSES="${CAUSES:-}" BACKEND_PORT ACCESS_LOG WORKERS
exec python3 "$HERE/app.py" "$PORT"
