#!/bin/sh
# Runs one corpus case under keisoku and prints its findings, one per line:
#   RANK<TAB>ID<TAB>SEVERITY<TAB>TITLE
# usage: run-case.sh SERVICE MODE CAUSES PORT [neighbour]
#   SERVICE  a directory of examples/ with start.sh (and profiler.txt naming the profiler)
#   MODE     naive or tuned;  CAUSES  comma-separated planted causes ("" for none)
#   PORT     the port the service listens on (it may use PORT+1..PORT+3 for its helpers)
#   neighbour  also run a CPU-hungry process (a busy loop) beside the service
# Environment: KEISOKU (the binary, default keisoku on PATH), CORPUS_DIR (where runs and logs
# go, default /tmp/keisoku-corpus), SWEEP (default 2..8:3), STEP (default 4s), WALL_PROFILE
# (keisoku's --wall-profile: auto, on or off; unset: keisoku's default).
set -eu
SERVICE=${1:?usage: run-case.sh SERVICE MODE CAUSES PORT [neighbour]}
MODE=${2:?mode}
CAUSES=${3-}
PORT=${4:?port}
NEIGHBOUR=${5:-}
HERE=$(cd "$(dirname "$0")" && pwd)
KEISOKU=${KEISOKU:-keisoku}
CORPUS_DIR=${CORPUS_DIR:-/tmp/keisoku-corpus}
SWEEP=${SWEEP:-2..8:3}
STEP=${STEP:-4s}
SVC_DIR="$HERE/$SERVICE"
[ -x "$SVC_DIR/start.sh" ] || { echo "run-case: no service $SERVICE in $HERE" >&2; exit 2; }
PROFILER=$(cat "$SVC_DIR/profiler.txt")
TARGET_PATH=$(cat "$SVC_DIR/target-path.txt" 2>/dev/null || echo /)
# JIT runtimes need longer before the measured phases stop being about compilation.
WARMUP=$(cat "$SVC_DIR/warmup.txt" 2>/dev/null || echo 2s)
CASE="$SERVICE-$MODE-$(echo "${CAUSES:-none}" | tr ',' '+')${NEIGHBOUR:+-neighbour}"
mkdir -p "$CORPUS_DIR"
STORE="$CORPUS_DIR/$CASE.db"
LOG="$CORPUS_DIR/$CASE.access.log"
rm -f "$STORE" "$LOG"
: > "$LOG"
"$SVC_DIR/install.sh"

NPID=
if [ -n "$NEIGHBOUR" ]; then
  # The shared host of issue 14: a busy loop in another process, not in the service's tree.
  sh -c 'while :; do :; done' &
  NPID=$!
fi
cleanup() { [ -n "$NPID" ] && kill "$NPID" 2>/dev/null; true; }
trap cleanup EXIT INT TERM

"$KEISOKU" run --target "http://127.0.0.1:$PORT$TARGET_PATH" \
  --server-cmd "MODE=$MODE CAUSES=$CAUSES ACCESS_LOG=$LOG exec $SVC_DIR/start.sh $PORT" \
  --server-timeout 90s \
  --profile "$PROFILER" ${WALL_PROFILE:+--wall-profile "$WALL_PROFILE"} --access-log "$LOG" \
  --sweep-connections "$SWEEP" --step-duration "$STEP" --warmup "$WARMUP" --profile-hz "${PROFILE_HZ:-199}" \
  --name "$CASE" --store "$STORE" > "$CORPUS_DIR/$CASE.out" 2>&1 || {
  rc=$?
  echo "run-case: keisoku run failed ($rc) for $CASE:" >&2
  tail -20 "$CORPUS_DIR/$CASE.out" >&2
  exit "$rc"
}
"$KEISOKU" export last --store "$STORE" > "$CORPUS_DIR/$CASE.json"
python3 -c '
import json, sys
for rank, f in enumerate(json.load(open(sys.argv[1]))["findings"], 1):
    print("%d\t%s\t%s\t%s" % (rank, f["id"], f["severity"], f["title"]))' "$CORPUS_DIR/$CASE.json"
