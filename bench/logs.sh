#!/usr/bin/env bash
# keisoku logs vs alp v1.0.21 on big LTSV logs, side by side.
#
# Generates (once, cached in bench/out/) a realistic nginx LTSV log of
# SIZE_GB (default 1) and a 4 GB one for the memory check, then alternates
# alp and keisoku RUNS times each on the same command line, recording wall
# time and peak RSS (/usr/bin/time -v). Prints medians and ratios.
#
# alp needs ~4 minutes per GB on the shared 2-core box, so the 4 GB log is
# measured with keisoku only unless ALP_BIG=1; alp's memory growth is shown
# on a quarter of the 1 GB log instead.
#
# usage: bench/logs.sh [RUNS]    env: SIZE_GB=1 BIG_GB=4 ALP_BIG=0 KEEP=1 (keep logs)
#                                    KEISOKU_BIN=path (skip the release build)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/.."
out="$here/out"
runs="${1:-3}"
size_gb="${SIZE_GB:-1}"
big_gb="${BIG_GB:-4}"
mkdir -p "$out"

"$here/alp/build.sh"
alp="$here/tools/alp"
if [[ -n "${KEISOKU_BIN:-}" ]]; then
  keisoku="$KEISOKU_BIN"
else
  (cd "$root" && cargo build --release -q -p keisoku)
  keisoku="${CARGO_TARGET_DIR:-$root/target}/release/keisoku"
fi
[[ -x /usr/bin/time ]] || { echo "bench: /usr/bin/time missing (apt-get install time)" >&2; exit 1; }

gen() { # path bytes
  [[ -s "$1" ]] && return 0
  python3 - "$1" "$2" <<'PY'
#!/usr/bin/env python3
"""Writes a realistic nginx LTSV access log of at least SIZE bytes to PATH:
~80 route templates with ids in their paths, Zipf-skewed popularity,
per-route lognormal latency with occasional slow outliers, a 5xx burst
mid-log, every status class. Deterministic (fixed seed).

usage: logs_gen.py PATH SIZE_BYTES
"""
import math, random, sys

path, size = sys.argv[1], int(float(sys.argv[2]))
rnd = random.Random(20261121)
bases = ["users", "items", "orders", "carts", "reviews", "images", "search", "feeds", "events", "tags",
         "comments", "sessions", "payments", "shops", "coupons", "notifications"]
templates = []
for b in bases:
    templates += [("GET", f"/api/{b}/{{id}}"), ("GET", f"/api/{b}?page={{p}}&sort=desc"),
                  ("POST", f"/api/{b}"), ("PUT", f"/api/{b}/{{id}}"), ("DELETE", f"/api/{b}/{{id}}")]
templates += [("GET", "/"), ("GET", "/static/app.{h}.js"), ("GET", "/static/style.{h}.css"), ("GET", "/favicon.ico")]
weights = [1.0 / (i + 1) ** 1.1 for i in range(len(templates))]
rnd.shuffle(weights)
medians = [rnd.choice([0.002, 0.005, 0.010, 0.030, 0.080, 0.200]) for _ in templates]
statuses = [200] * 90 + [201, 204, 301, 302, 304, 400, 401, 404, 404, 499, 500, 502, 503, 101]
t0 = 1763719200
written = 0
line_no = 0
with open(path, "w", buffering=1 << 22) as f:
    while written < size:
        batch = []
        picks = rnd.choices(range(len(templates)), weights, k=50_000)
        for i in picks:
            m, u = templates[i]
            u = u.replace("{id}", str(rnd.randrange(1, 100_000))).replace("{p}", str(rnd.randrange(1, 50))).replace("{h}", "%08x" % rnd.getrandbits(32))
            rt = rnd.lognormvariate(math.log(medians[i]), 0.8)
            if rnd.random() < 0.001:
                rt *= 50
            sec = line_no // 2000
            st = rnd.choice(statuses)
            if 1800 <= sec < 1830 and rnd.random() < 0.3:
                st, rt = 504, rt + 5.0
            rt = round(rt, 3)
            app = "-" if u.startswith("/static") or u == "/favicon.ico" else "%.3f" % max(0.0, rt - 0.001)
            size_b = 0 if st in (204, 304) else int(rnd.lognormvariate(7, 1.5))
            ts = t0 + sec
            hh, mm, ss = (ts // 3600) % 24, (ts // 60) % 60, ts % 60
            day = 21 + (ts - t0 + 36000) // 86400
            batch.append(f"time:2025-11-{day:02d}T{hh:02d}:{mm:02d}:{ss:02d}+00:00\thost:10.0.{line_no % 250}.{line_no % 199}\tforwardedfor:-\treq:{m} {u} HTTP/1.1\tmethod:{m}\turi:{u}\tstatus:{st}\tsize:{size_b}\treferer:-\tua:Mozilla/5.0 (X11; Linux x86_64) bench/1.0\treqtime:{rt:.3f}\tcache:-\truntime:-\tapptime:{app}\tvhost:bench.local\n")
            line_no += 1
        chunk = "".join(batch)
        f.write(chunk)
        written += len(chunk)
print(f"{path}: {written} bytes, {line_no} lines")
PY
}

groups='/api/[a-z]+/[0-9]+,/api/[a-z]+\?,/static/app,/static/style'
# One measurement: prints "seconds max_rss_kb".
measure() {
  local log="$1"; shift
  /usr/bin/time -v "$@" >"$out/last.out" 2>"$out/last.time" || { cat "$out/last.time" >&2; exit 1; }
  local wall rss
  wall=$(grep 'Elapsed (wall clock)' "$out/last.time" | awk '{print $NF}' | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
  rss=$(grep 'Maximum resident set size' "$out/last.time" | awk '{print $NF}')
  echo "$wall $rss"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

bench_one() { # log label runs with_alp
  local log="$1" label="$2" n="$3" with_alp="${4:-1}" bytes
  bytes=$(stat -c %s "$log")
  : >"$out/alp.$label"; : >"$out/keisoku.$label"
  cat "$log" >/dev/null   # page cache warm for both
  for i in $(seq "$n"); do
    if [[ "$with_alp" == 1 ]]; then
      measure "$log" "$alp" ltsv --file "$log" -m "$groups" --sort sum -r >>"$out/alp.$label"
      cp "$out/last.out" "$out/alp.$label.table"
    fi
    measure "$log" "$keisoku" logs ltsv "$log" -m "$groups" --sort sum -r --no-progress >>"$out/keisoku.$label"
    cp "$out/last.out" "$out/keisoku.$label.table"
  done
  local kt kr
  kt=$(awk '{print $1}' "$out/keisoku.$label" | median)
  kr=$(awk '{print $2}' "$out/keisoku.$label" | sort -n | tail -1)
  if [[ "$with_alp" != 1 ]]; then
    awk -v b="$bytes" -v kt="$kt" -v kr="$kr" -v l="$label" -v n="$n" 'BEGIN {
      printf "| %s (%.2f GB, %d runs) | not run | %.1f s, %.0f MB/s, %.0f MB RSS | |\n", l, b/1e9, n, kt, b/kt/1e6, kr/1024 }'
    return
  fi
  local at ar
  at=$(awk '{print $1}' "$out/alp.$label" | median)
  ar=$(awk '{print $2}' "$out/alp.$label" | sort -n | tail -1)
  awk -v b="$bytes" -v at="$at" -v kt="$kt" -v ar="$ar" -v kr="$kr" -v l="$label" -v n="$n" 'BEGIN {
    printf "| %s (%.2f GB, %d runs) | %.1f s, %.0f MB/s, %.0f MB RSS | %.1f s, %.0f MB/s, %.0f MB RSS | %.1fx |\n",
      l, b/1e9, n, at, b/at/1e6, ar/1024, kt, b/kt/1e6, kr/1024, at/kt }'
  # Same routes and counts in both tables (full comparison lives in the tests).
  diff <(awk -F'|' 'NF>10 {print $2,$8,$9}' "$out/alp.$label.table" | sort) \
       <(awk -F'|' 'NF>10 {print $2,$8,$9}' "$out/keisoku.$label.table" | sort) >/dev/null \
    || echo "bench: WARNING: route counts differ between alp and keisoku on $label" >&2
}

log1="$out/logs-${size_gb}g.ltsv"
gen "$log1" "${size_gb}e9"
echo "machine: $(nproc) cores, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
echo "command: alp ltsv --file LOG -m '$groups' --sort sum -r   vs   keisoku logs ltsv LOG (same flags)"
echo "| log | alp v1.0.21 | keisoku logs | speed-up |"
echo "|---|---|---|---|"
quarter="$out/logs-quarter.ltsv"
head -c $(( $(stat -c %s "$log1") / 4 )) "$log1" | sed '$d' >"$quarter"
bench_one "$quarter" "quarter" 1
bench_one "$log1" "${size_gb}GB" "$runs"
if [[ "$big_gb" != 0 ]]; then
  log4="$out/logs-${big_gb}g.ltsv"
  gen "$log4" "${big_gb}e9"
  bench_one "$log4" "${big_gb}GB" 1 "${ALP_BIG:-0}"
  [[ "${KEEP:-0}" == 1 ]] || rm -f "$log4"
fi
rm -f "$quarter"
[[ "${KEEP:-0}" == 1 ]] || rm -f "$log1"
