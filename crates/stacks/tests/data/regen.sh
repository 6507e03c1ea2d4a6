#!/usr/bin/env bash
# Re-records the real profiles used as test fixtures (run as root on Linux
# with perf, gcc, JDK 17, node, python3 and go installed). Each capture is
# trimmed to a few hundred samples so the fixtures stay small; the expected
# folded outputs (*.folded.expected) are then regenerated with
# inferno-collapse-perf, which tracks stackcollapse-perf.pl, and must be
# reviewed by hand before committing (`git diff` them).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
inferno="${INFERNO_COLLAPSE_PERF:-$here/../../../../bench/tools/bin/inferno-collapse-perf}"

# Keeps the first N samples (a sample ends at a blank line) of perf script output.
first_samples() { awk -v n="$1" 'BEGIN{RS="";ORS="\n\n"} NR<=n'; }

# 1. C: a CPU-bound program with a known call tree, frame pointers kept.
cat > busy.c <<'C'
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) static double leaf_sqrt(double x) { double r = x; for (int i = 0; i < 40; i++) r = 0.5 * (r + x / r); return r; }
__attribute__((noinline)) static double hash_loop(int n) { double s = 0; for (int i = 1; i < n; i++) s += leaf_sqrt(i); return s; }
__attribute__((noinline)) static double sort_work(int n) { double *a = malloc(sizeof(double) * n); for (int i = 0; i < n; i++) a[i] = (i * 7919) % n; for (int i = 0; i < n; i++) for (int j = i + 1; j < n && j < i + 64; j++) if (a[j] < a[i]) { double t = a[i]; a[i] = a[j]; a[j] = t; } double s = a[n / 2]; free(a); return s; }
int main(void) { double t = 0; for (int k = 0; k < 8; k++) { t += hash_loop(200000); t += sort_work(200000); } printf("%f\n", t); return 0; }
C
gcc -O2 -fno-omit-frame-pointer -o busy busy.c
perf record -q -F 999 -g -e cpu-clock -o c.data ./busy >/dev/null
perf script -i c.data 2>/dev/null | first_samples 400 > "$here/c.perf"
perf script -i c.data --header 2>/dev/null | sed -n '1,/^# ====/p' > header.txt
{ cat header.txt; perf script -i c.data 2>/dev/null | first_samples 100; } > "$here/c-header.perf"
perf script -i c.data -F comm,pid,tid,time,period,event,ip,sym,dso 2>/dev/null | first_samples 100 > "$here/c-fields.perf"
# System-wide (-a): many processes, comms with spaces, kernel frames, CPU numbers, idle.
perf record -q -a -F 999 -g -e cpu-clock -o sys.data ./busy >/dev/null
perf script -i sys.data -F comm,pid,tid,cpu,time,period,event,ip,sym,dso 2>/dev/null | first_samples 600 > "$here/system.perf"

# 2. Two events in one file (cpu-clock and task-clock), selected with --event.
perf record -q -F 499 -g -e cpu-clock -e task-clock -o two.data ./busy >/dev/null
perf script -i two.data 2>/dev/null | first_samples 200 > "$here/two-events.perf"

# 3. Java with a perf map (JIT frames named through /tmp/perf-PID.map).
cat > Busy.java <<'J'
public class Busy {
  static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
  static String concat(int n) { StringBuilder b = new StringBuilder(); for (int i = 0; i < n; i++) b.append(i % 10); return b.toString(); }
  public static void main(String[] a) { long t = 0; long end = System.currentTimeMillis() + 3000; while (System.currentTimeMillis() < end) { t += fib(25); t += concat(20000).length(); } System.out.println(t); }
}
J
javac Busy.java
perf record -q -F 999 -g -e cpu-clock -o java.data java -XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit Busy >/dev/null
perf script -i java.data 2>/dev/null | awk 'BEGIN{RS="";ORS="\n\n"} /perf-[0-9]+\.map/' | first_samples 150 > "$here/java.perf"

# 4. Node with --perf-basic-prof (JS frames from the perf map) and --cpu-prof.
cat > busy.js <<'JS'
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function strings(n) { let s = ''; for (let i = 0; i < n; i++) s += String.fromCharCode(97 + (i % 26)); return s.length; }
const end = Date.now() + 2000; let t = 0;
while (Date.now() < end) { t += fib(22); t += strings(5000); }
console.log(t);
JS
perf record -q -F 999 -g -e cpu-clock -o node.data node --perf-basic-prof busy.js >/dev/null
perf script -i node.data 2>/dev/null | awk 'BEGIN{RS="";ORS="\n\n"} /perf-[0-9]+\.map/' | first_samples 150 > "$here/node.perf"
node --cpu-prof --cpu-prof-dir=prof --cpu-prof-interval 1000 busy.js >/dev/null
cp prof/*.cpuprofile "$here/node.cpuprofile"
gzip -9 -f "$here/node.cpuprofile"

# 5. Python (the interpreter's own C frames; with -X perf on 3.12+ also py:: frames).
cat > busy.py <<'PY'
import time
def fib(n): return n if n < 2 else fib(n - 1) + fib(n - 2)
end = time.time() + 2
while time.time() < end: fib(18)
PY
py=$(command -v python3)
if "$py" -X perf -c 'pass' 2>/dev/null; then pyflags="-X perf"; else pyflags=""; fi
perf record -q -F 999 -g -e cpu-clock -o py.data "$py" $pyflags busy.py >/dev/null
perf script -i py.data 2>/dev/null | first_samples 150 > "$here/python.perf"

# 6. Go: a CPU profile from runtime/pprof (gzip-compressed protobuf).
mkdir -p gobusy && cd gobusy
cat > main.go <<'GO'
package main

import (
	"crypto/sha256"
	"os"
	"runtime/pprof"
	"sort"
	"time"
)

func hashLoop(n int) byte { var h [32]byte; for i := 0; i < n; i++ { h = sha256.Sum256(h[:]) }; return h[0] }
func sortLoop(n int) int { a := make([]int, n); for i := range a { a[i] = (i * 7919) % n }; sort.Ints(a); return a[n/2] }

func main() {
	f, _ := os.Create(os.Args[1])
	pprof.StartCPUProfile(f)
	end := time.Now().Add(1500 * time.Millisecond)
	s := 0
	for time.Now().Before(end) { s += int(hashLoop(20000)); s += sortLoop(100000) }
	pprof.StopCPUProfile()
	f.Close()
	if s == 42 { println(s) }
}
GO
cat > go.mod <<'MOD'
module gobusy

go 1.20
MOD
go run . "$here/go.pprof"
cd ..

# 7. py-spy speedscope JSON (py-spy 0.4.3, CPython 3.11): two threads, one
#    sample with an empty stack (the main thread after its work ended).
cat > spy.py <<'PY'
import threading
def leaf(n):
    s = 0
    for i in range(n): s += i * i
    return s
def work():
    for _ in range(30): leaf(30000)
def other():
    return sum(leaf(30000) for _ in range(20))
t = threading.Thread(target=other, name="worker"); t.start()
work(); t.join()
PY
py-spy record --format speedscope -r 250 -o "$here/py-spy.speedscope.json" -- python3 spy.py

# Expected folded outputs: keisoku's own, then compared with inferno, which
# tracks stackcollapse-perf.pl. Known, reviewed divergences where keisoku
# follows the Perl script and inferno does not (see docs/profiles.md):
#  - samples whose only frames are skipped "(...)" names still count as the
#    bare process name;
#  - the period is read with Perl's /:\s*(\d+)*\s+(\S+):\s*$/ even when perf
#    aligns the event name with two spaces;
#  - Rust generic names like "<T<(A, B)>>::f" are cut at the first "(".
keisoku="${KEISOKU:-$here/../../../../target/debug/keisoku}"
collapse() { # name flags...
  local out="$1"; shift
  "$keisoku" collapse perf -j1 "$@" > "$here/$out.folded.expected"
  if [ -x "$inferno" ]; then
    "$inferno" "$@" | diff -q - "$here/$out.folded.expected" >/dev/null || echo "review: $out differs from inferno-collapse-perf" >&2
  fi
}
for f in c c-header c-fields system two-events java node python; do
  collapse "$f" "$here/$f.perf"
done
collapse java.all --all "$here/java.perf"
collapse system.pid-kernel --pid --kernel "$here/system.perf"
collapse system.tid-all-addrs --tid --all --addrs "$here/system.perf"
collapse node.tid-addrs --tid --addrs "$here/node.perf"
collapse two-events.task --event-filter task-clock "$here/two-events.perf"
# Keep the fixtures small: everything over 16 KB is stored gzip-compressed
# (keisoku reads gzip transparently; the tests expect the .gz names).
find "$here" -maxdepth 1 -type f \( -name '*.perf' -o -name '*.expected' \) -size +16k -exec gzip -9 -f {} \;
ls -la "$here"
