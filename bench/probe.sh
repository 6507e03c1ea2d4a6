#!/usr/bin/env bash
# CPU cost of host/process sampling: keisoku's sampler (crates/probe, via
# its `sample` example writing every point to a TSV file, and the whole
# `keisoku record -- sleep DUR` storing them in SQLite) vs sysstat's
# collector `sadc -S XALL` (what `sar -A -o FILE` runs) and `dool` with
# comparable plugins, each collecting for DUR seconds. All collectors of one
# repetition run at the same time (same machine state), launch order
# rotates, REPS repetitions; the cost of each is the CPU time all its
# threads used (/proc/PID/task/*/schedstat, nanoseconds) in one DUR-second
# window that opens after start-up, reported as % of one core and as a
# ratio to keisoku at 1 s. sadc and dool only take whole-second
# intervals, so keisoku's 100 ms row has no peer at that rate.
#
#   bench/probe.sh                  # REPS=3 DUR=60
#   REPS=5 DUR=60 RECORD=1 bench/probe.sh   # also `keisoku record`
#   IDLE_THREADS=200 bench/probe.sh   # a JVM-like target: 200 idle threads more
#   SAMPLE_BEFORE=path/to/sample bench/probe.sh   # also an older sampler build
#                                                # on the tree (before/after)
#
# Installs its peers idempotently (Debian sysstat, `pip install dool`).
# Prints a Markdown section for bench/RESULTS.md on stdout; raw numbers go
# to bench/out/probe.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."

REPS=${REPS:-3}
DUR=${DUR:-60}
OUT=bench/out/probe
mkdir -p "$OUT"

need_apt=()
[[ -x /usr/lib/sysstat/sadc ]] || need_apt+=(sysstat)
if ((${#need_apt[@]})); then
  SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
if ! command -v dool >/dev/null 2>&1; then
  echo "probe bench: installing dool (pip)" >&2
  pip install -q dool >&2
fi
echo "probe bench: building the sampler example (release)" >&2
cargo build --release -q -p keisoku-probe --example sample
SAMPLE=${CARGO_TARGET_DIR:-target}/release/examples/sample
# The whole `keisoku record -- sleep DUR` (sampler + SQLite run store) too,
# with KEISOKU=path, or RECORD=1 to build it here.
if [[ -z ${KEISOKU:-} && ${RECORD:-0} == 1 ]]; then
  echo "probe bench: building keisoku (release)" >&2
  if cargo build --release -q -p keisoku; then
    KEISOKU=${CARGO_TARGET_DIR:-target}/release/keisoku
  else
    echo "probe bench: keisoku does not build; its row is left out" >&2
  fi
fi

cores=$(nproc)
cpu_list=total; for ((i = 0; i < cores; i++)); do cpu_list+=",$i"; done
disks=$(awk '$3 !~ /^(loop|ram|zram)/ && $4 > 0 {print $3}' /proc/diskstats | while read -r d; do [[ -e /sys/block/$d ]] && echo "$d"; done | paste -sd, -)
ifaces=$(awk -F: 'NR > 2 {gsub(/ /, "", $1); print $1}' /proc/net/dev | paste -sd, -)

# A process for the "with a target" row: a small tree (shell + 2 sleeping
# children + a Python process whose 8 threads each wake 200 times a second
# and do a little work), so per-thread series (thread.*) are emitted as
# they would be for a server's workers, and pidstat -t has threads to show.
IDLE_THREADS=${IDLE_THREADS:-0}
BUSY='import threading, time
for i in range('$IDLE_THREADS'):
    threading.Thread(target=threading.Event().wait, name=f"idle-{i}", daemon=True).start()
def work():
    while True:
        time.sleep(0.005)
        sum(range(6000))
for i in range(8):
    threading.Thread(target=work, name=f"busy-{i}", daemon=True).start()
threading.Event().wait()'
sh -c "sleep $((DUR * REPS * 3)) & sleep $((DUR * REPS * 3)) & python3 -c '$BUSY' & wait" &
TREE=$!
trap 'pkill -P $TREE 2>/dev/null; kill $TREE 2>/dev/null || true' EXIT
sleep 1
TREE_PIDS=$(echo "$TREE" $(pgrep -P "$TREE") | tr ' ' ,)

# CPU time a process has used so far, in seconds: the sum over its threads
# of /proc/PID/task/TID/schedstat's run time (nanoseconds; utime/stime in
# /proc/PID/stat count 10 ms ticks, too coarse for a collector's cost).
cpu_now() {
  cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.6f\n", s / 1e9}'
}

# Collectors run longer than the measured window: it opens WARM seconds in,
# after start-up (the first reads, opening files, Python's imports), and
# closes DUR seconds later, while all of them still run.
WARM=5
LIFE=$((WARM + DUR + 5))
start_tool() { # name rep -> starts the collector in the background ($! is its pid)
  local name=$1 rep=$2
  case $name in
    keisoku-1s) "$SAMPLE" --interval-ms 1000 --seconds "$LIFE" --out "$OUT/$name.$rep.tsv" 2>"$OUT/$name.$rep.err" & ;;
    keisoku-1s-pid) "$SAMPLE" --interval-ms 1000 --seconds "$LIFE" --pid "$TREE" --out "$OUT/$name.$rep.tsv" 2>"$OUT/$name.$rep.err" & ;;
    keisoku-before) "$SAMPLE_BEFORE" --interval-ms 1000 --seconds "$LIFE" --pid "$TREE" --out "$OUT/$name.$rep.tsv" 2>"$OUT/$name.$rep.err" & ;;
    keisoku-100ms) "$SAMPLE" --interval-ms 100 --seconds "$LIFE" --pid "$TREE" --out "$OUT/$name.$rep.tsv" 2>"$OUT/$name.$rep.err" & ;;
    keisoku-record) rm -f "$OUT/runs.$rep.db"*; "$KEISOKU" record --store "$OUT/runs.$rep.db" --interval 1s --pid "$TREE" --profile none -- sleep "$LIFE" >/dev/null 2>"$OUT/$name.$rep.err" & ;;
    sadc) rm -f "$OUT/sa.$rep"; /usr/lib/sysstat/sadc -S XALL 1 $((LIFE + 1)) "$OUT/sa.$rep" & ;;
    # sadc records no per-process data; sysstat's per-process collector for
    # the same tree (every thread: CPU, memory, I/O, context switches).
    pidstat) LC_ALL=C pidstat -t -u -r -d -w -p "$TREE_PIDS" 1 $((LIFE + 1)) >"$OUT/pidstat.$rep.txt" 2>&1 & ;;
    dool) dool --nocolor --noupdate -c -C "$cpu_list" -d -D "total,$disks" -n -N "total,$ifaces" -g -y \
            --vm --proc --mem --swap --io --tcp --socket --fs --aio --output "$OUT/dool.$rep.csv" 1 "$LIFE" >/dev/null 2>"$OUT/$name.$rep.err" & ;;
  esac
}

TOOLS=(keisoku-1s keisoku-1s-pid keisoku-100ms sadc pidstat dool)
[[ -n ${SAMPLE_BEFORE:-} ]] && TOOLS+=(keisoku-before)
[[ -n ${KEISOKU:-} ]] && TOOLS+=(keisoku-record)
: >"$OUT/../probe.tsv"
for ((rep = 1; rep <= REPS; rep++)); do
  echo "probe bench: repetition $rep/$REPS (${DUR}s measured)" >&2
  n=${#TOOLS[@]}
  declare -A pid=() c0=()
  for ((k = 0; k < n; k++)); do
    tool=${TOOLS[$(((k + rep) % n))]}
    start_tool "$tool" "$rep"
    pid[$tool]=$!
  done
  sleep "$WARM"
  for tool in "${TOOLS[@]}"; do c0[$tool]=$(cpu_now "${pid[$tool]}"); done
  sleep "$DUR"
  for tool in "${TOOLS[@]}"; do
    c1=$(cpu_now "${pid[$tool]}")
    echo -e "$tool\t$rep\t$(awk -v a="${c0[$tool]}" -v b="$c1" 'BEGIN {printf "%.6f", b - a}')" >>"$OUT/../probe.tsv"
  done
  for tool in "${TOOLS[@]}"; do kill "${pid[$tool]}" 2>/dev/null || true; done
  wait "${pid[@]}" 2>/dev/null || true
done

median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
cpu_of() { awk -v t="$1" '$1 == t {print $3}' "$OUT/../probe.tsv" | median; }
base=$(cpu_of keisoku-1s)
points=$(awk 'END {print NR}' "$OUT/keisoku-1s.1.tsv")
model=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)

cat <<EOF

## probe: sampler CPU cost vs sar (sadc) and dool ($(date -u +%Y-%m-%d))

\`$([[ -n ${KEISOKU:-} ]] && echo "RECORD=1 ")REPS=$REPS DUR=$DUR bench/probe.sh\` on $cores cores ($model), Linux $(uname -r).
All collectors ran at the same time; cost = CPU seconds (all threads, from
/proc/PID/task/*/schedstat) each used in the same ${DUR} s window that opened
${WARM} s after start-up, median of $REPS repetitions, as % of one core.
keisoku wrote $points points per ${DUR} s at 1 s (host only) to a TSV file.

| collector | interval | CPU s in ${DUR} s | % of one core | vs keisoku 1 s |
| --- | --- | --- | --- | --- |
EOF
for tool in "${TOOLS[@]}"; do
  c=$(cpu_of "$tool")
  case $tool in
    keisoku-1s) what="keisoku sampler, host"; iv="1 s" ;;
    keisoku-1s-pid) what="keisoku sampler, host + process tree"; iv="1 s" ;;
    keisoku-before) what="\`$SAMPLE_BEFORE\` (older build), host + process tree"; iv="1 s" ;;
    keisoku-100ms) what="keisoku sampler, host + process tree"; iv="100 ms" ;;
    keisoku-record) what="\`keisoku record --pid P --profile none -- sleep\` (sampler + run store)"; iv="1 s" ;;
    sadc) what="sadc -S XALL (sar -A)"; iv="1 s" ;;
    pidstat) what="pidstat -t -u -r -d -w -p TREE (per-process peer)"; iv="1 s" ;;
    dool) what="dool -cdngy --vm --proc --mem --swap --io --tcp --socket --fs --aio"; iv="1 s" ;;
  esac
  awk -v w="$what" -v iv="$iv" -v c="$c" -v b="$base" -v d="$DUR" \
    'BEGIN {printf "| %s | %s | %.3f | %.3f%% | %s |\n", w, iv, c, c / d * 100, (b > 0 ? sprintf("%.1fx", c / b) : "n/a")}'
done
# The like-for-like peer of "host + process tree": sadc and pidstat together
# (summed per repetition, then the median).
c=$(awk '$1 == "sadc" || $1 == "pidstat" {s[$2] += $3} END {for (r in s) print s[r]}' "$OUT/../probe.tsv" | median)
awk -v c="$c" -v b="$base" -v d="$DUR" \
  'BEGIN {printf "| sadc + pidstat (host + process tree) | 1 s | %.3f | %.3f%% | %s |\n", c, c / d * 100, (b > 0 ? sprintf("%.1fx", c / b) : "n/a")}'
