#!/bin/sh
# Starts the Java bidder (JDK HttpServer, 16 worker threads, logback) at 127.0.0.1:PORT.
#   MODE=naive|tuned  CAUSES=rollover,regex,formatter,scan,syncaudit (naive only; syncaudit
#   starts the audit service, examples/flask-shop/backend.py, at PORT+1)
#   ACCESS_LOG=FILE (LTSV)  BID_LOG_DIR (default /tmp/keisoku-corpus/java-bidder-PORT)
#   BID_LOG_MB (rollover: the size limit in MiB, default 48; the log starts just under it)
# Prints "java-bidder listening on PORT" when it accepts connections.
set -eu
PORT=${1:?usage: start.sh PORT}
HERE=$(cd "$(dirname "$0")" && pwd)
"$HERE/install.sh"
MODE=${MODE:-naive}
case "$MODE" in naive|tuned) ;; *) echo "java-bidder: MODE must be naive or tuned, not $MODE" >&2; exit 2 ;; esac
BID_LOG_DIR=${BID_LOG_DIR:-/tmp/keisoku-corpus/java-bidder-$PORT}
ACCESS_LOG=${ACCESS_LOG:-/tmp/keisoku-corpus/java-bidder-$PORT.log}
rm -rf "$BID_LOG_DIR" && mkdir -p "$BID_LOG_DIR" "$(dirname "$ACCESS_LOG")"
CONFIG=$HERE/logback-tuned.xml
if [ "$MODE" = naive ]; then
  case ",${CAUSES:-}," in *,rollover,*) CONFIG=$HERE/logback-rollover.xml ;; esac
fi
if [ "$CONFIG" = "$HERE/logback-rollover.xml" ]; then
  # The log the previous process left, 16 KiB under the limit: the first rollover compresses
  # a whole file, so the stall is as long on a crowded host as on a quiet one (or longer).
  BID_LOG_MB=${BID_LOG_MB:-48}
  case "$BID_LOG_MB" in ''|*[!0-9]*) echo "java-bidder: BID_LOG_MB must be a whole number of MiB, not $BID_LOG_MB" >&2; exit 2 ;; esac
  export BID_LOG_MAX="${BID_LOG_MB}MB"
  python3 "$HERE/prefill-bid-log.py" "$BID_LOG_DIR/bids.log" $((BID_LOG_MB * 1024 * 1024 - 16384))
fi
AUDIT_PORT=$((PORT + 1))
if [ "$MODE" = naive ]; then
  case ",${CAUSES:-}," in
    *,syncaudit,*)
      # The audit service (40 ms an answer), outside this process tree as a real one would be.
      "$HERE/../start-backend.sh" "$AUDIT_PORT" $$ python3 "$HERE/../flask-shop/backend.py" ;;
  esac
fi
export MODE CAUSES="${CAUSES:-}" ACCESS_LOG BID_LOG_DIR AUDIT_PORT
# nodelay: without it the JDK server's separate header and body writes meet Nagle and delayed ACKs (+40 ms).
exec java -XX:+PreserveFramePointer -Dsun.net.httpserver.nodelay=true -Xms256m -Xmx256m -Dlogback.configurationFile="$CONFIG" \
  -cp "$HERE/build:$(cat "$HERE/build/classpath")" bidder.Bidder "$PORT"
