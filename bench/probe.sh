#!/usr/bin/env bash
# CPU cost of host/process sampling: keisoku's sampler (crates/probe, via
# its `sample` example writing every point to a TSV file, and the whole
# `keisoku record -- sleep DUR` storing them in SQLite) vs sysstat's
# collector `sadc -S XALL` (what `sar -A -o FILE` runs) and `dool` with
# comparable plugins, each collecting for DUR seconds. All collectors of one
# repetition run at the same time (same machine state), launch order
# rotates, REPS repetitions; the cost of each is user+sys CPU seconds of its
# process (and children) from getrusage, reported as % of one core and
# as a ratio to keisoku at 1 s. sadc and dool only take whole-second
# intervals, so keisoku's 100 ms row has no peer at that rate.
#
#   bench/probe.sh                  # REPS=3 DUR=60
#   REPS=5 DUR=60 bench/probe.sh
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
# when the binary builds; KEISOKU=path skips the build.
if [[ -z ${KEISOKU:-} ]]; then
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

# A process for the "with a target" row: a small tree (shell + 2 children).
sh -c "sleep $((DUR * REPS * 3)) & sleep $((DUR * REPS * 3)) & wait" &
TREE=$!
trap 'kill $TREE 2>/dev/null; pkill -P $TREE 2>/dev/null || true' EXIT

# Runs a command and writes its user and system CPU seconds (kernel
# accounting with microsecond resolution; /usr/bin/time rounds to 10 ms).
cputime() { # outfile cmd args...
  local out=$1; shift
  python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[2:])
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write("%.6f %.6f\n" % (r.ru_utime, r.ru_stime))' "$out" "$@"
}

run_tool() { # name rep -> starts the collector under cputime in the background
  local name=$1 rep=$2 t="$OUT/$1.$2.time"
  case $name in
    keisoku-1s) cputime "$t" "$SAMPLE" --interval-ms 1000 --seconds "$DUR" --out "$OUT/$name.$rep.tsv" 2>"$OUT/$name.$rep.err" & ;;
    keisoku-1s-pid) cputime "$t" "$SAMPLE" --interval-ms 1000 --seconds "$DUR" --pid "$TREE" --out "$OUT/$name.$rep.tsv" 2>"$OUT/$name.$rep.err" & ;;
    keisoku-100ms) cputime "$t" "$SAMPLE" --interval-ms 100 --seconds "$DUR" --pid "$TREE" --out "$OUT/$name.$rep.tsv" 2>"$OUT/$name.$rep.err" & ;;
    keisoku-record) rm -f "$OUT/runs.$rep.db"*; cputime "$t" "$KEISOKU" record --store "$OUT/runs.$rep.db" --interval 1s --pid "$TREE" -- sleep "$DUR" >/dev/null 2>"$OUT/$name.$rep.err" & ;;
    sadc) rm -f "$OUT/sa.$rep"; cputime "$t" /usr/lib/sysstat/sadc -S XALL 1 $((DUR + 1)) "$OUT/sa.$rep" & ;;
    dool) cputime "$t" dool --nocolor --noupdate -c -C "$cpu_list" -d -D "total,$disks" -n -N "total,$ifaces" -g -y \
            --vm --proc --mem --swap --io --tcp --socket --fs --aio --output "$OUT/dool.$rep.csv" 1 "$DUR" >/dev/null 2>"$OUT/$name.$rep.err" & ;;
  esac
}

TOOLS=(keisoku-1s keisoku-1s-pid keisoku-100ms sadc dool)
[[ -n ${KEISOKU:-} ]] && TOOLS+=(keisoku-record)
: >"$OUT/../probe.tsv"
for ((rep = 1; rep <= REPS; rep++)); do
  echo "probe bench: repetition $rep/$REPS (${DUR}s)" >&2
  n=${#TOOLS[@]}
  for ((k = 0; k < n; k++)); do
    run_tool "${TOOLS[$(((k + rep) % n))]}" "$rep"
  done
  wait $(jobs -p | grep -v "^$TREE\$") 2>/dev/null || true
  for tool in "${TOOLS[@]}"; do
    read -r u s <"$OUT/$tool.$rep.time"
    echo -e "$tool\t$rep\t$u\t$s" >>"$OUT/../probe.tsv"
  done
done

median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
cpu_of() { awk -v t="$1" '$1 == t {print $3 + $4}' "$OUT/../probe.tsv" | median; }
base=$(cpu_of keisoku-1s)
points=$(awk 'END {print NR}' "$OUT/keisoku-1s.1.tsv")
model=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)

cat <<EOF

## probe: sampler CPU cost vs sar (sadc) and dool ($(date -u +%Y-%m-%d))

\`REPS=$REPS DUR=$DUR bench/probe.sh\` on $cores cores ($model), Linux $(uname -r).
All collectors ran at the same time for ${DUR} s per repetition; cost = user+sys
CPU seconds of the collector process (median of $REPS), as % of one core.
keisoku wrote $points points per ${DUR} s at 1 s (host only) to a TSV file.

| collector | interval | CPU s in ${DUR} s | % of one core | vs keisoku 1 s |
| --- | --- | --- | --- | --- |
EOF
for tool in "${TOOLS[@]}"; do
  c=$(cpu_of "$tool")
  case $tool in
    keisoku-1s) what="keisoku sampler, host"; iv="1 s" ;;
    keisoku-1s-pid) what="keisoku sampler, host + process tree"; iv="1 s" ;;
    keisoku-100ms) what="keisoku sampler, host + process tree"; iv="100 ms" ;;
    keisoku-record) what="\`keisoku record --pid P -- sleep ${DUR}\` (sampler + run store)"; iv="1 s" ;;
    sadc) what="sadc -S XALL (sar -A)"; iv="1 s" ;;
    dool) what="dool -cdngy --vm --proc --mem --swap --io --tcp --socket --fs --aio"; iv="1 s" ;;
  esac
  awk -v w="$what" -v iv="$iv" -v c="$c" -v b="$base" -v d="$DUR" \
    'BEGIN {printf "| %s | %s | %.3f | %.3f%% | %s |\n", w, iv, c, c / d * 100, (b > 0 ? sprintf("%.1fx", c / b) : "n/a")}'
done
