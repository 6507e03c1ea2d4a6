#!/usr/bin/env bash
# What keeping a run's access-log lines costs, and what reading them back
# costs, side by side with the alternatives:
#
#  1. size: a realistic nginx LTSV log (bench/logs.sh's generator) appended
#     during `keisoku record --access-log`; store bytes per kept line and the
#     ratio to the raw log (gzip -6 of the same log for reference).
#  2. recorder CPU, with and without --no-log-lines, alternating, user+sys
#     CPU of keisoku per million lines: (a) the realistic log of 1 appended
#     at once (varied lines: what compression really costs); (b) nginx
#     (2 workers, LTSV log) under wrk for DUR seconds (a live high line rate,
#     but wrk repeats one request, so its lines compress unusually cheaply).
#  3. reading back: `keisoku logs RUN` vs `keisoku logs ltsv FILE` on the
#     same lines (the run from 1 and the log it kept), alternating; wall
#     time and peak RSS, medians and the ratio.
#
# The disk is shared: the generated log, its copies and the stores (about
# 4x SIZE_MB) are deleted at the end unless KEEP=1.
#
# usage: bench/log-lines.sh [RUNS]   env: SIZE_MB=300 DUR=20 KEISOKU_BIN=path KEEP=0
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/.."
out="$here/out/log-lines"
runs="${1:-3}"
size_mb="${SIZE_MB:-300}"
dur="${DUR:-20}"
mkdir -p "$out"
cleanup() {
  [[ -n "${ngx:-}" ]] && kill "$ngx" 2>/dev/null
  [[ "${KEEP:-0}" == 1 ]] && return 0
  rm -f "$out"/followed.log "$out"/kept.ltsv "$out"/seed-*.ltsv "$out"/*.db "$out"/*.db-wal "$out"/*.db-shm "$out"/nginx/access.log
}
trap cleanup EXIT

if [[ -n "${KEISOKU_BIN:-}" ]]; then
  keisoku="$KEISOKU_BIN"
else
  (cd "$root" && cargo build --release -q -p keisoku)
  keisoku="${CARGO_TARGET_DIR:-$root/target}/release/keisoku"
fi
need() { command -v "$1" >/dev/null || { echo "bench: $1 missing (apt-get install -y $2)" >&2; exit 1; }; }
need nginx nginx-light
need wrk wrk
need sqlite3 sqlite3
[[ -x /usr/bin/time ]] || { echo "bench: /usr/bin/time missing (apt-get install -y time)" >&2; exit 1; }

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# Runs a command under /usr/bin/time; prints "wall_s cpu_s max_rss_kb".
measure() {
  /usr/bin/time -f '%e %U %S %M' -o "$out/time" "$@" >"$out/last.out" 2>"$out/last.err" \
    || { cat "$out/last.err" >&2; exit 1; }
  awk '{printf "%s %.3f %s\n", $1, $2 + $3, $4}' "$out/time"
}

echo "machine: $(nproc) cores, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"

# --- 1. size -------------------------------------------------------------
log="$out/seed-${size_mb}m.ltsv"
if [[ ! -s "$log" ]]; then
  awk '/python3 - "\$1" "\$2" <<.PY./{f=1;next} /^PY$/{f=0} f' "$here/logs.sh" >"$out/gen.py"
  python3 "$out/gen.py" "$log" "${size_mb}e6" >/dev/null
fi
store="$out/runs.db"
rm -f "$store" "$store-wal" "$store-shm" "$out/followed.log"
: >"$out/followed.log"
"$keisoku" record --store "$store" --name size --profile none --access-log "$out/followed.log" \
  -- sh -c "cat '$log' >> '$out/followed.log'" >/dev/null 2>"$out/record.err"
raw=$(stat -c %s "$log")
lines=$(wc -l <"$log")
read -r kept stored <<<"$(sqlite3 -separator " " "$store" "SELECT kept_lines, stored_bytes FROM access_logs")"
chunk_rows=$(sqlite3 "$store" "SELECT COUNT(*) FROM log_chunks")
gz=$(gzip -6 -c "$log" | wc -c)
echo
echo "## size: $((raw / 1000000)) MB, $lines lines of nginx LTSV ($(awk -v r="$raw" -v l="$lines" 'BEGIN{printf "%.0f", r/l}') B/line)"
echo "| | bytes | bytes/line | ratio to raw |"
echo "|---|---|---|---|"
awk -v r="$raw" -v l="$lines" -v k="$kept" -v s="$stored" -v g="$gz" -v c="$chunk_rows" 'BEGIN {
  if (k != l) { printf "bench: WARNING: kept %d of %d lines\n", k, l > "/dev/stderr" }
  printf "| kept in the store (%d chunks) | %d | %.1f | %.1fx |\n", c, s, s/l, r/s
  printf "| gzip -6 of the file | %d | %.1f | %.1fx |\n", g, g/l, r/g }'

# --- 2a. recorder CPU on the realistic log -----------------------------------
burst() { # label flags...
  local label="$1"; shift
  : >"$out/followed.log"
  measure "$keisoku" record --store "$out/burst.db" --name "$label" --profile none \
    --access-log "$out/followed.log" "$@" -- sh -c "cat '$log' >> '$out/followed.log'"
}
rm -f "$out/burst.db" "$out/burst.db-wal" "$out/burst.db-shm"
: >"$out/burst.keep"; : >"$out/burst.nokeep"
for _ in $(seq "$runs"); do
  burst keep >>"$out/burst.keep"
  burst nokeep --no-log-lines >>"$out/burst.nokeep"
done
kc=$(awk '{print $2}' "$out/burst.keep" | median); nc=$(awk '{print $2}' "$out/burst.nokeep" | median)
echo
echo "## recorder CPU, realistic lines: the log above appended at once while keisoku record follows it ($runs runs each, alternating, medians)"
echo "| | keisoku CPU | CPU s per 1M lines |"
echo "|---|---|---|"
awk -v c="$kc" -v l="$lines" 'BEGIN{printf "| keeps lines (default) | %.2f s | %.2f |\n", c, c/l*1e6}'
awk -v c="$nc" -v l="$lines" 'BEGIN{printf "| --no-log-lines | %.2f s | %.2f |\n", c, c/l*1e6}'
awk -v k="$kc" -v n="$nc" -v l="$lines" 'BEGIN{d=(k-n)/l*1e6; printf "keeping lines: +%.2f CPU s per 1M lines (+%.0f%%); at 10,000 lines/s that is %.1f%% of one core\n", d, (k-n)/n*100, d}'

# --- 3. reading back ------------------------------------------------------
run=$(sqlite3 "$store" "SELECT id FROM runs WHERE name = 'size'")
"$keisoku" export "$run" --store "$store" --format log >"$out/kept.ltsv"
cmp -s "$out/kept.ltsv" "$log" || echo "bench: WARNING: the kept lines differ from the log" >&2
groups='/api/[a-z]+/[0-9]+,/api/[a-z]+\?,/static/app,/static/style'
: >"$out/read.run"; : >"$out/read.file"
cat "$out/kept.ltsv" >/dev/null
for _ in $(seq "$runs"); do
  measure "$keisoku" logs "$run" --store "$store" -m "$groups" --sort sum -r --slow 5 --no-progress >>"$out/read.run"
  cp "$out/last.out" "$out/run.table"
  measure "$keisoku" logs ltsv "$out/kept.ltsv" -m "$groups" --sort sum -r --slow 5 --no-progress >>"$out/read.file"
  cp "$out/last.out" "$out/file.table"
done
cmp -s "$out/run.table" "$out/file.table" || echo "bench: WARNING: logs RUN and logs FILE printed different tables" >&2
rt=$(awk '{print $1}' "$out/read.run" | median); ft=$(awk '{print $1}' "$out/read.file" | median)
rr=$(awk '{print $3}' "$out/read.run" | sort -n | tail -1); fr=$(awk '{print $3}' "$out/read.file" | sort -n | tail -1)
echo
echo "## reading back: logs RUN vs logs ltsv FILE, same $lines lines, -m ... --sort sum -r --slow 5 ($runs runs each, alternating, medians)"
echo "| | wall | MB/s (raw) | peak RSS |"
echo "|---|---|---|---|"
awk -v b="$raw" -v t="$ft" -v r="$fr" 'BEGIN{printf "| keisoku logs ltsv FILE | %.2f s | %.0f | %.0f MB |\n", t, b/t/1e6, r/1024}'
awk -v b="$raw" -v t="$rt" -v r="$rr" 'BEGIN{printf "| keisoku logs RUN | %.2f s | %.0f | %.0f MB |\n", t, b/t/1e6, r/1024}'
awk -v a="$rt" -v b="$ft" 'BEGIN{printf "ratio RUN/FILE: %.2fx the time\n", a/b}'

# --- 2b. recorder CPU under nginx load -------------------------------------
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
nd="$out/nginx"; rm -rf "$nd"; mkdir -p "$nd"
cat >"$nd/nginx.conf" <<EOF
worker_processes 2;
daemon off;
pid $nd/nginx.pid;
error_log $nd/error.log;
events { worker_connections 1024; }
http {
  log_format ltsv "time:\$time_iso8601\thost:\$remote_addr\tforwardedfor:-\treq:\$request\tmethod:\$request_method\turi:\$request_uri\tstatus:\$status\tsize:\$body_bytes_sent\treferer:\$http_referer\tua:\$http_user_agent\treqtime:\$request_time\tcache:-\truntime:-\tapptime:-\tvhost:\$host";
  access_log $nd/access.log ltsv;
  client_body_temp_path $nd; proxy_temp_path $nd; fastcgi_temp_path $nd; uwsgi_temp_path $nd; scgi_temp_path $nd;
  server { listen 127.0.0.1:$port; location / { return 200 "hello\n"; } }
}
EOF
nginx -c "$nd/nginx.conf" -e "$nd/error.log" &
ngx=$!
for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.1; done
cstore="$out/cpu.db"; rm -f "$cstore" "$cstore-wal" "$cstore-shm"
: >"$out/cpu.keep"; : >"$out/cpu.nokeep"
one() { # label flags...
  local label="$1"; shift
  : >"$nd/access.log"
  wrk -t1 -c16 -d"$((dur + 2))s" "http://127.0.0.1:$port/items/123?page=2" >"$out/wrk.out" 2>&1 &
  local w=$!
  sleep 1
  local m
  m=$(measure "$keisoku" record --store "$cstore" --name "$label" --profile none \
        --access-log "$nd/access.log" "$@" -- sleep "$dur")
  wait "$w"
  local id n
  id=$(sqlite3 "$cstore" "SELECT id FROM runs WHERE name = '$label' ORDER BY started_unix_ms DESC LIMIT 1")
  n=$(sqlite3 "$cstore" "SELECT lines FROM access_logs WHERE run_id = '$id'")
  echo "$m $n"
}
for _ in $(seq "$runs"); do
  one keep >>"$out/cpu.keep"
  one nokeep --no-log-lines >>"$out/cpu.nokeep"
done
echo
echo "## recorder CPU: keisoku record --access-log following nginx under wrk, ${dur}s each ($runs runs each, alternating, medians)"
echo "| | lines/s | keisoku CPU | CPU s per 1M lines | % of one core |"
echo "|---|---|---|---|---|"
row() { # label file
  awk -v d="$dur" -v l="$1" '{print $2, $4}' "$2" | sort -n | awk -v d="$dur" -v l="$1" '
    {c[NR]=$1; n[NR]=$2} END {
      m = (NR+1)/2; m = int(m); cpu = c[m]; lines = n[m]
      printf "| %s | %.0f | %.2f s | %.2f | %.1f%% |\n", l, lines/d, cpu, cpu/lines*1e6, cpu/d*100 }'
}
row "keeps lines (default)" "$out/cpu.keep"
row "--no-log-lines" "$out/cpu.nokeep"
kc=$(awk '{print $2}' "$out/cpu.keep" | median); nc=$(awk '{print $2}' "$out/cpu.nokeep" | median)
awk -v k="$kc" -v n="$nc" -v d="$dur" 'BEGIN{printf "keeping lines costs %.2f s more CPU over %ss (%.1f%% of one core)\n", k-n, d, (k-n)/d*100}'
