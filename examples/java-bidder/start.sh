#!/bin/sh
# Starts the Java bidder (JDK HttpServer, 16 worker threads, logback) at 127.0.0.1:PORT.
#   MODE=naive|tuned  CAUSES=rollover,regex,formatter,scan (naive only)
#   ACCESS_LOG=FILE (LTSV)  BID_LOG_DIR (default /tmp/keisoku-corpus/java-bidder-PORT)
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
export MODE CAUSES="${CAUSES:-}" ACCESS_LOG BID_LOG_DIR
# nodelay: without it the JDK server's separate header and body writes meet Nagle and delayed ACKs (+40 ms).
exec java -XX:+PreserveFramePointer -Dsun.net.httpserver.nodelay=true -Xms256m -Xmx256m -Dlogback.configurationFile="$CONFIG" \
  -cp "$HERE/build:$(cat "$HERE/build/classpath")" bidder.Bidder "$PORT"
