#!/usr/bin/env bash
# keisoku logs pcap vs alp v1.0.21 pcap on a large capture, side by side.
#
# Starts nginx on 127.0.0.1:$PORT, captures loopback traffic with tcpdump
# while `keisoku bench` sends REQUESTS requests (keep-alive, 16 connections,
# ids in the paths, query strings, 404 and 500 among them), then runs alp and
# keisoku alternately RUNS times each on the capture, recording wall time and
# peak RSS (/usr/bin/time -v), and checks that their tables are identical.
# The capture (hundreds of MB) is deleted afterwards unless KEEP=1.
#
# usage: bench/logs-pcap.sh [RUNS]   env: REQUESTS=1000000 PORT=19020 KEEP=0
#                                        KEISOKU_BIN=path (skip the release build)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/.."
runs="${1:-3}"
requests="${REQUESTS:-1000000}"
port="${PORT:-19020}"
work="$(mktemp -d /tmp/keisoku-pcap-bench.XXXXXX)"

"$here/alp/build.sh"
alp="$here/tools/alp"
if [[ -n "${KEISOKU_BIN:-}" ]]; then
  keisoku="$KEISOKU_BIN"
else
  (cd "$root" && cargo build --profile release -q -p keisoku)
  keisoku="${CARGO_TARGET_DIR:-$root/target}/release/keisoku"
fi
for tool in /usr/bin/time tcpdump nginx; do
  command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] ||
    { echo "bench: $tool missing (scripts/setup.sh)" >&2; exit 1; }
done

nginx_pid="" tcpdump_pid=""
cleanup() {
  [[ -n $tcpdump_pid ]] && kill "$tcpdump_pid" 2>/dev/null || true
  [[ -n $nginx_pid ]] && kill "$nginx_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  if [[ "${KEEP:-0}" == 1 ]]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

mkdir -p "$work/www/static" "$work/tmp"
echo hello >"$work/www/static/small.txt"
head -c 20000 /dev/zero | tr '\0' x >"$work/www/static/page.html"
cat >"$work/nginx.conf" <<CONF
worker_processes 1;
daemon off;
$([[ $(id -u) == 0 ]] && echo "user root;")
pid $work/nginx.pid;
error_log $work/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
  uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
  keepalive_requests 100000;
  server {
    listen 127.0.0.1:$port;
    root $work/www;
    location /api/users/ { return 200 "user\n"; }
    location /api/items/ { return 200 "item\n"; }
    location = /api/error { return 500 "boom\n"; }
  }
}
CONF
nginx -p "$work" -c "$work/nginx.conf" -e "$work/error.log" &
nginx_pid=$!
until (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null; do sleep 0.05; done

b="http://127.0.0.1:$port"
{
  for id in $(seq 0 999); do
    echo "3 GET $b/api/users/$id"
    echo "GET $b/api/items/$id?sort=desc&page=$((id % 7))"
  done
  echo "GET $b/static/small.txt"
  echo "GET $b/static/page.html"
  echo "GET $b/static/missing.txt"
  echo "GET $b/api/error"
} >"$work/targets.txt"

cap="$work/big.pcap"
tcpdump -i lo -n -U -B 262144 -w "$cap" "tcp port $port" 2>"$work/tcpdump.log" &
tcpdump_pid=$!
until grep -q "listening on" "$work/tcpdump.log" 2>/dev/null; do sleep 0.05; done
"$keisoku" bench --targets "$work/targets.txt" -n "$requests" -c 16 >"$work/bench.txt"
kill -INT "$tcpdump_pid"; wait "$tcpdump_pid" || true; tcpdump_pid=""
grep -E "captured|dropped" "$work/tcpdump.log" | sed 's/^/tcpdump: /'
echo "capture: $(du -h "$cap" | cut -f1), $requests requests sent"

measure() { # name tool...
  local name=$1; shift
  /usr/bin/time -v "$@" pcap --file "$cap" --pcap-server-port "$port" >"$work/$name.out" 2>"$work/$name.time"
  local wall rss
  wall=$(grep "Elapsed (wall clock)" "$work/$name.time" | awk '{print $NF}')
  rss=$(grep "Maximum resident" "$work/$name.time" | awk '{print $NF}')
  echo "$name wall $wall maxrss_kb $rss"
}
for i in $(seq 1 "$runs"); do
  measure alp "$alp" | tee -a "$work/results"
  measure keisoku "$keisoku" logs | tee -a "$work/results"
  cmp -s "$work/alp.out" "$work/keisoku.out" && echo "run $i: tables identical" ||
    { echo "run $i: TABLES DIFFER"; diff "$work/alp.out" "$work/keisoku.out" | head -5; }
done
echo "requests in the table: $(awk -F'|' 'NR>3 && $2 ~ /[0-9]/ {s+=$2} END {print s}' "$work/keisoku.out")"
echo "uptime: $(uptime)"
