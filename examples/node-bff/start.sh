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
(setsid node "$HERE/backend.js" "$BACKEND_PORT" $$ > /dev/null 2>&1 &)
# Wait for it: the service must not announce itself before its backend answers.
python3 -c 'import socket, sys, time
port = int(sys.argv[1])
for _ in range(150):
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit("backend did not listen on %d within 15 s" % port)' "$BACKEND_PORT"
export MODE CAUSES="${CAUSES:-}" ACCESS_LOG BACKEND_PORT NODE_ENV=production
exec node --perf-basic-prof "$HERE/server.js" "$PORT"
