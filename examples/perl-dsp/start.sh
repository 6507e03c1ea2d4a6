#!/bin/sh
# Starts the Perl DSP bid server on Starman at 127.0.0.1:PORT.
#   MODE=naive|tuned  CAUSES=oversubscribed (naive only)  ACCESS_LOG=FILE (LTSV)
# naive: one worker per core unpinned, or 4 per core with `oversubscribed`;
# tuned: one worker per core, each pinned to its own core.
# Prints "perl-dsp listening on PORT" once it accepts connections.
set -eu
PORT=${1:?usage: start.sh PORT}
HERE=$(cd "$(dirname "$0")" && pwd)
"$HERE/install.sh"
MODE=${MODE:-naive}
CAUSES=${CAUSES:-}
case "$MODE" in naive|tuned) ;; *) echo "perl-dsp: MODE must be naive or tuned, not $MODE" >&2; exit 2 ;; esac
for c in $(echo "$CAUSES" | tr ',' ' '); do
  case "$c" in oversubscribed) ;; *) echo "perl-dsp: unknown cause $c (known: oversubscribed)" >&2; exit 2 ;; esac
done
CORES=$(nproc)
WORKERS=$CORES
if [ "$MODE" = naive ]; then
  case ",$CAUSES," in *,oversubscribed,*) WORKERS=$((CORES * 4)) ;; esac
fi
ACCESS_LOG=${ACCESS_LOG:-/tmp/keisoku-corpus/perl-dsp-$PORT.log}
mkdir -p "$(dirname "$ACCESS_LOG")"
PIN_COUNTER=$(mktemp /tmp/keisoku-corpus/perl-dsp-pins.XXXXXX)
export MODE CAUSES ACCESS_LOG PIN_COUNTER
# Starman prints "Starman: Accepting connections at http://127.0.0.1:PORT/" on stderr.
exec starman --listen "127.0.0.1:$PORT" --workers "$WORKERS" "$HERE/app.psgi" 2>&1
