#!/usr/bin/env bash
# keisoku logs vs alp v1.0.21 on a log where every request has its own URI
# (issue 15, item 8): memory must grow with requests, not routes.
#
# Generates (once, cached in bench/out/) an LTSV log of ROUTES lines, one
# request per distinct URI, and runs both tools once on it with
# /usr/bin/time -v, printing wall time and peak RSS. keisoku runs with
# `--limit` above ROUTES (its default of 5000 refuses such a log) in every
# output format and with the analysis alone (`-o count`), then with the
# default limit to show that the limit bounds memory too.
#
# usage: bench/logs-routes.sh    env: ROUTES=1000000 KEISOKU_BIN=path (skip the release build)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/.."
out="$here/out"
routes="${ROUTES:-1000000}"
mkdir -p "$out"

"$here/alp/build.sh" >&2
alp="$here/tools/alp"
if [[ -n "${KEISOKU_BIN:-}" ]]; then
  keisoku="$KEISOKU_BIN"
else
  (cd "$root" && cargo build --release -q -p keisoku)
  keisoku="${CARGO_TARGET_DIR:-$root/target}/release/keisoku"
fi
[[ -x /usr/bin/time ]] || { echo "bench: /usr/bin/time missing (apt-get install time)" >&2; exit 1; }

log="$out/routes-$routes.ltsv"
if [[ ! -s "$log" ]]; then
  python3 - "$log" "$routes" <<'PY'
import random, sys
path, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(20261124)
with open(path, "w") as f:
    for i in range(n):
        t = rnd.lognormvariate(-4.0, 1.0)
        f.write("time:2026-11-24T00:%02d:%02d+00:00\tmethod:GET\turi:/items/%d/view\t"
                "status:%d\tsize:%d\treqtime:%.3f\n"
                % (i // 60000 % 60, i // 1000 % 60, i, 200 if i % 50 else 500,
                   rnd.randint(100, 5000), t))
PY
fi
echo "log: $log ($(du -h "$log" | cut -f1), $routes distinct URIs)"

measure() { # label cmd...
  local label="$1"; shift
  local err="$out/routes-time.txt"
  local rc=0
  /usr/bin/time -v "$@" >/dev/null 2>"$err" || rc=$?
  local rss wall
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$err")
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$err")
  printf '%-34s exit %d  %8s  %6s MB RSS\n' "$label" "$rc" "$wall" "$rss"
}

# Both refuse more than 5000 routes by default; the same --limit for both.
limit=$((routes + 1))
measure "alp ltsv --limit $limit" "$alp" ltsv --file "$log" --limit "$limit"
measure "keisoku logs ltsv --limit $limit" "$keisoku" logs ltsv "$log" --limit "$limit"
# Every output format prints the whole table; each must stay near the
# analysis alone (`-o count`): the rows are written as they are made.
for format in md tsv csv json html; do
  measure "keisoku ... --format $format" "$keisoku" logs ltsv "$log" --limit "$limit" --format "$format"
done
measure "keisoku ... --format tsv -o count" "$keisoku" logs ltsv "$log" --limit "$limit" --format tsv -o count
measure "alp ltsv (default limit 5000)" "$alp" ltsv --file "$log"
measure "keisoku logs ltsv (default limit 5000)" "$keisoku" logs ltsv "$log"
