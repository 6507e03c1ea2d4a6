#!/bin/sh
# Starts the Flask shop on gunicorn at 127.0.0.1:PORT (the inventory/audit backend on PORT+1).
#   MODE=naive|tuned|gthread   CAUSES=slowcall,config,nokeepalive,oneworker (naive and gthread)
#   ACCESS_LOG=FILE    LTSV access log (default /tmp/keisoku-corpus/flask-shop-PORT.log)
# 2*cores+1 sync workers (gunicorn's advice), or one with the cause oneworker; tuned: no causes.
# gthread: gunicorn's threaded workers (one process per core, GTHREADS threads each) with CAUSES;
# without causes it is the tuned shop on a thread pool.
# Prints "flask-shop listening on PORT" once gunicorn accepts connections.
set -eu
PORT=${1:?usage: start.sh PORT}
HERE=$(cd "$(dirname "$0")" && pwd)
"$HERE/install.sh"
MODE=${MODE:-naive}
case "$MODE" in naive|tuned|gthread) ;; *) echo "flask-shop: MODE must be naive, tuned or gthread, not $MODE" >&2; exit 2 ;; esac
BACKEND_PORT=$((PORT + 1))
ACCESS_LOG=${ACCESS_LOG:-/tmp/keisoku-corpus/flask-shop-$PORT.log}
mkdir -p "$(dirname "$ACCESS_LOG")"
# Started outside this process tree (a detached session) so keisoku watches and profiles the
# shop alone, as it would with a real external service; it exits when this process does.
"$HERE/../start-backend.sh" "$BACKEND_PORT" $$ python3 "$HERE/backend.py"
WORKERS=$(( $(nproc) * 2 + 1 ))
WORKER_ARGS="--worker-class sync"
if [ "$MODE" = gthread ]; then
  # A thread pool per worker process, fed from a queue by the worker's main thread (its
  # accept loop): one process per core and GTHREADS threads each (default 4), as gunicorn's
  # docs suggest for threads; CAUSES as in naive (none: the tuned app).
  WORKERS=$(nproc)
  WORKER_ARGS="--worker-class gthread --threads ${GTHREADS:-4}"
fi
if [ "$MODE" != tuned ]; then
  case ",${CAUSES:-}," in *,oneworker,*) WORKERS=1 ;; esac
fi
export MODE CAUSES="${CAUSES:-}" BACKEND_PORT
# gunicorn's %(t)s is [day/Mon/year:H:M:S zone]; %(L)s the request time in seconds.
exec python3 -m gunicorn --chdir "$HERE" --bind "127.0.0.1:$PORT" --workers "$WORKERS" \
  $WORKER_ARGS --access-logfile "$ACCESS_LOG" \
  --access-logformat 'time:%(t)s	method:%(m)s	uri:%(U)s	status:%(s)s	size:%(B)s	reqtime:%(L)s' \
  --log-level warning \
  --config "$HERE/gunicorn_ready.py" app:app
