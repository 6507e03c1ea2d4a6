#!/usr/bin/env bash
# keisoku collapse perf vs inferno-collapse-perf on a >= 500 MB perf script
# file built from real captures recorded on this machine.
#
#   bench/stacks.sh            # REPS=3 SIZE_MB=512 by default
#   REPS=5 SIZE_MB=1024 bench/stacks.sh
#
# Runs alternate (keisoku -j1, inferno 1 thread, keisoku -j2, inferno 2
# threads) so machine noise hits all alike; reports medians of wall time,
# throughput and peak RSS (/usr/bin/time -v), and ratios keisoku/inferno.
# Needs root for perf record. Output: bench/out/stacks/*.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
out="$root/bench/out/stacks"
mkdir -p "$out"
REPS="${REPS:-3}"
SIZE_MB="${SIZE_MB:-512}"

# Peers, installed idempotently.
inferno="$root/bench/tools/bin/inferno-collapse-perf"
if [ ! -x "$inferno" ]; then
  cargo install inferno --root "$root/bench/tools"
fi
# KEISOKU=path/to/release/keisoku skips the build (e.g. while the tree is mid-edit).
if [ -z "${KEISOKU:-}" ]; then
  CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}" cargo build --release -p keisoku
fi
keisoku="${KEISOKU:-${CARGO_TARGET_DIR:-$root/target}/release/keisoku}"

# 1. Real captures: a system-wide 999 Hz profile while a C program, the JVM
#    and node run (kernel frames, JIT perf maps, many processes).
capture="$out/capture.perf"
if [ ! -s "$capture" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  cat > "$work/busy.c" <<'C'
#include <stdlib.h>
__attribute__((noinline)) static double leaf(double x) { double r = x; for (int i = 0; i < 40; i++) r = 0.5 * (r + x / r); return r; }
__attribute__((noinline)) static double walk(int n) { double s = 0; for (int i = 1; i < n; i++) s += leaf(i); return s; }
int main(void) { double t = 0; for (int k = 0; k < 400; k++) { t += walk(200000); void *p = malloc(1 << 20); free(p); } return t < 0; }
C
  gcc -O2 -fno-omit-frame-pointer -o "$work/busy" "$work/busy.c"
  cat > "$work/busy.js" <<'JS'
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
const end = Date.now() + 8000; let t = 0; while (Date.now() < end) { t += fib(24); t += JSON.stringify({a: [t, String(t)]}).length; }
JS
  ( "$work/busy" & node --perf-basic-prof "$work/busy.js" & wait ) &
  perf record -q -a -g -F 999 -e cpu-clock -o "$work/perf.data" -- sleep 8
  wait
  perf script -i "$work/perf.data" -F comm,pid,tid,cpu,time,period,event,ip,sym,dso > "$capture" 2>/dev/null
  rm -rf "$work"
  trap - EXIT
fi
input="$out/perf-${SIZE_MB}m.perf"
if [ ! -s "$input" ] || [ "$(stat -c %s "$input")" -lt $((SIZE_MB * 1024 * 1024)) ]; then
  : > "$input"
  while [ "$(stat -c %s "$input")" -lt $((SIZE_MB * 1024 * 1024)) ]; do
    cat "$capture" >> "$input"
  done
fi
bytes=$(stat -c %s "$input")
samples=$(grep -c -E '^[^[:space:]#]' "$capture" || true)
echo "input: $input, $((bytes / 1024 / 1024)) MB (capture $(stat -c %s "$capture") bytes, $samples samples, replicated)" >&2

# Same answer first: keisoku -j1 and -j2 agree byte for byte.
"$keisoku" collapse perf -j1 "$input" > "$out/keisoku-j1.folded"
"$keisoku" collapse perf -j2 "$input" > "$out/keisoku-j2.folded"
cmp "$out/keisoku-j1.folded" "$out/keisoku-j2.folded"
"$inferno" --nthreads 1 "$input" > "$out/inferno.folded"
if cmp -s "$out/keisoku-j1.folded" "$out/inferno.folded"; then
  echo "outputs: keisoku == inferno" >&2
else
  echo "outputs: keisoku and inferno differ on $(diff "$out/keisoku-j1.folded" "$out/inferno.folded" | grep -c '^[<>]') lines (known divergences, see docs/profiles.md)" >&2
fi

# run NAME CMD...: one timed run; appends "name wall_s rss_kb" to results.
results="$out/results.txt"
: > "$results"
run() {
  local name="$1"; shift
  /usr/bin/time -v -o "$out/time.txt" "$@" > /dev/null
  local wall rss cpu
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$out/time.txt")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$out/time.txt")
  cpu=$(awk -F': ' '/User time|System time/ {s+=$2} END {print s}' "$out/time.txt")
  echo "$name $wall $rss $cpu" >> "$results"
  echo "  $name: ${wall}s wall, ${cpu}s CPU, peak RSS ${rss} KB" >&2
}
for rep in $(seq 1 "$REPS"); do
  echo "repetition $rep/$REPS" >&2
  run keisoku-1 "$keisoku" collapse perf -j1 "$input"
  run inferno-1 "$inferno" --nthreads 1 "$input"
  run keisoku-2 "$keisoku" collapse perf -j2 "$input"
  run inferno-2 "$inferno" --nthreads 2 "$input"
done

median() { grep "^$1 " "$results" | awk '{print $'"$2"'}' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# Wall time needs idle cores; on a shared machine CPU time (user+sys) shows
# the work done, so both are reported.
{
  echo "load average during the run: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
  echo
  echo "| tool | median wall s | MB/s (wall) | median CPU s | MB per CPU s | peak RSS MB | wall vs inferno | CPU vs inferno |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
  for t in 1 2; do
    kw=$(median "keisoku-$t" 2); iw=$(median "inferno-$t" 2)
    kr=$(median "keisoku-$t" 3); ir=$(median "inferno-$t" 3)
    kc=$(median "keisoku-$t" 4); ic=$(median "inferno-$t" 4)
    awk -v b="$bytes" -v kw="$kw" -v iw="$iw" -v kr="$kr" -v ir="$ir" -v kc="$kc" -v ic="$ic" -v t="$t" 'BEGIN {
      mb = b / 1048576;
      printf "| keisoku collapse perf -j%d | %.2f | %.0f | %.2f | %.0f | %.0f | %.2fx | %.2fx |\n", t, kw, mb/kw, kc, mb/kc, kr/1024, iw/kw, ic/kc;
      printf "| inferno-collapse-perf --nthreads %d | %.2f | %.0f | %.2f | %.0f | %.0f | 1.00x | 1.00x |\n", t, iw, mb/iw, ic, mb/ic, ir/1024 }'
  done
} | tee "$out/table.md"
