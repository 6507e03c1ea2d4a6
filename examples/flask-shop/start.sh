#!/bin/sh
# Starts the Flask shop on gunicorn at 127.0.0.1:PORT (the inventory/audit backend on PORT+1).
#   MODE=naive|tuned   CAUSES=slowcall,config,nokeepalive,oneworker (naive only)
#   ACCESS_LOG=FILE    LTSV access log (default /tmp/keisoku-corpus/flask-shop-PORT.log)
# 2*cores+1 sync workers (gunicorn's advice), or one with the cause oneworker; tuned: no causes.
# Prints "flask-shop listening on PORT" once gunicorn accepts connections.
set -eu
PORT=${1:?usage: start.sh PORT}
HERE=$(cd "$(dirname "$0")" && pwd)
"$HERE/install.sh"
MODE=${MODE:-naive}
case "$MODE" in naive|tuned) ;; *) echo "flask-shop: MODE must be naive or tuned, not $MODE" >&2; exit 2 ;; esac
BACKEND_PORT=$((PORT + 1))
ACCESS_LOG=${ACCESS_LOG:-/tmp/keisoku-corpus/flask-shop-$PORT.log}
mkdir -p "$(dirname "$ACCESS_LOG")"
# Started outside this process tree (a detached session) so keisoku watches and profiles the
# shop alone, as it would with a real external service; it exits when this process does.
"$HERE/../start-backend.sh" "$BACKEND_PORT" $$ python3 "$HERE/backend.py"
WORKERS=$(( $(nproc) * 2 + 1 ))
if [ "$MODE" = naive ]; then
  case ",${CAUSES:-}," in *,oneworker,*) WORKERS=1 ;; esac
fi
export MODE CAUSES="${CAUSES:-}" BACKEND_PORT
# gunicorn's %(t)s is [day/Mon/year:H:M:S zone]; %(L)s the request time in seconds.
exec python3 -m gunicorn --chdir "$HERE" --bind "127.0.0.1:$PORT" --workers "$WORKERS" \
  --worker-class sync --access-logfile "$ACCESS_LOG" \
  --access-logformat 'time:%(t)s	method:%(m)s	uri:%(U)s	status:%(s)s	size:%(B)s	reqtime:%(L)s' \
  --log-level warning \
  --config "$HERE/gunicorn_ready.py" app:app
