#!/usr/bin/env bash
# Two keisoku builds side by side on the same inputs (a restructuring or a
# refactor must not cost speed): logs on an LTSV log, collapse and flame on
# a perf script. Alternates OLD and NEW RUNS times per command and prints the
# median wall time and peak RSS of each, and NEW/OLD.
#
# usage: bench/binaries.sh OLD_BIN NEW_BIN [RUNS]     env: LINES=2000000 SAMPLES=400000
set -euo pipefail
old="$1"; new="$2"; runs="${3:-3}"
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/out/binaries"; mkdir -p "$out"
lines="${LINES:-2000000}"; samples="${SAMPLES:-400000}"
[[ -x /usr/bin/time ]] || { echo "bench: /usr/bin/time missing (apt-get install time)" >&2; exit 1; }

log="$out/access-$lines.ltsv"
[[ -s "$log" ]] || python3 - "$log" "$lines" <<'PY'
import random, sys
path, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(7)
routes = [f"/api/v1/items/{{}}", "/api/v1/users/{}", "/health", "/search?q={}", "/orders/{}/lines"]
with open(path, "w") as f:
    for i in range(n):
        r = rng.choice(routes).format(rng.randint(1, 50000))
        st = 503 if rng.random() < 0.03 else 200
        t = rng.lognormvariate(-4, 1)
        f.write(f"time:2026-11-23T10:{i // 60000 % 60:02d}:{i // 1000 % 60:02d}+00:00\tmethod:GET\turi:{r}\tstatus:{st}\tsize:{rng.randint(10, 5000)}\treqtime:{t:.3f}\tapptime:{t:.3f}\n")
PY
perf="$out/perf-$samples.script"
[[ -s "$perf" ]] || python3 - "$perf" "$samples" <<'PY'
import random, sys
path, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(7)
funcs = [f"fn_{i}" for i in range(400)]
with open(path, "w") as f:
    for i in range(n):
        f.write(f"app 42/{42 + i % 4} [00{i % 2}] {1000 + i / 1000:.6f}: 10101010 cpu-clock:\n")
        for d in range(rng.randint(3, 25)):
            f.write(f"\t    {0x5500 + d:x} {rng.choice(funcs)}+0x{d:x} (/usr/bin/app)\n")
        f.write("\t    55b0 main+0x3 (/usr/bin/app)\n\n")
PY

cmds=(
  "logs ltsv $log --auto-group"
  "logs ltsv $log --auto-group --format json --timeline 1s"
  "collapse perf $perf"
  "flame $perf -o $out/flame.html"
)
measure() { # bin cmd -> "secs rss_kb"
  /usr/bin/time -f "%e %M" -o "$out/time" "$1" $2 >/dev/null 2>"$out/err" || { cat "$out/err" >&2; exit 1; }
  cat "$out/time"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
printf '%-62s %9s %9s %7s %9s %9s\n' command old_s new_s new/old old_MB new_MB
for c in "${cmds[@]}"; do
  : >"$out/o"; : >"$out/n"
  for _ in $(seq "$runs"); do measure "$old" "$c" >>"$out/o"; measure "$new" "$c" >>"$out/n"; done
  os=$(cut -d' ' -f1 "$out/o" | median); ns=$(cut -d' ' -f1 "$out/n" | median)
  om=$(cut -d' ' -f2 "$out/o" | median); nm=$(cut -d' ' -f2 "$out/n" | median)
  printf '%-62s %9s %9s %7.2f %9.0f %9.0f\n' "${c//$out\//}" "$os" "$ns" "$(echo "$ns / $os" | bc -l)" "$(echo "$om / 1024" | bc -l)" "$(echo "$nm / 1024" | bc -l)"
done
