#!/usr/bin/env bash
# Replay's cost: CPU per request of `keisoku bench --replay` beside a plain
# open-model `keisoku bench -R` at the same rate, one run each, side by side.
# nginx (1 worker, `return 200`) on 127.0.0.1 records an LTSV log (`$msec`,
# `$request_time`) of a RATE req/s open-model load first; that log (copied,
# so the runs that follow do not grow it) is then replayed at its recorded
# pace to a second nginx server that logs nothing, and the same rate is sent
# as a plain open-model run. CPU is user+sys of the keisoku process
# (/usr/bin/time): for the replay it includes reading the file twice (the
# plan's pass and the reader thread).
#
#   bench/replay.sh                          # defaults below
#   RATE=5000 DUR=20 CONNS=50 THREADS=1 PORT=18720 bench/replay.sh
#
# Prints a Markdown table for bench/RESULTS.md on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

RATE=${RATE:-2000}
DUR=${DUR:-20}
CONNS=${CONNS:-50}
THREADS=${THREADS:-1}
PORT=${PORT:-18720}

if [[ -z "${KEISOKU:-}" ]]; then
  echo "replay: building keisoku (release)" >&2
  cargo build --release -q -p keisoku
  KEISOKU=${CARGO_TARGET_DIR:-$PWD/target}/release/keisoku
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
rec=$PORT
quiet=$((PORT + 1))
tmp=$(mktemp -d)
cat >"$tmp/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $tmp/nginx.pid;
error_log $tmp/error.log;
events { worker_connections 10240; }
http {
  log_format ltsv "time:\$msec\tmethod:\$request_method\turi:\$request_uri\tstatus:\$status\tsize:\$body_bytes_sent\treqtime:\$request_time";
  keepalive_requests 100000000;
  client_body_temp_path $tmp; proxy_temp_path $tmp; fastcgi_temp_path $tmp; uwsgi_temp_path $tmp; scgi_temp_path $tmp;
  server { listen 127.0.0.1:$rec; access_log $tmp/rec.ltsv ltsv; location / { return 200 "ok\n"; } }
  server { listen 127.0.0.1:$quiet; access_log off; location / { return 200 "ok\n"; } }
}
CONF
"$NGINX" -c "$tmp/nginx.conf" -p "$tmp" &
nginx_pid=$!
trap 'kill $nginx_pid 2>/dev/null; wait $nginx_pid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do
  (exec 3<>/dev/tcp/127.0.0.1/$quiet) 2>/dev/null && break
  sleep 0.1
done

common=(-c "$CONNS" -t "$THREADS")
"$KEISOKU" bench -R "$RATE" -d "${DUR}s" "${common[@]}" "http://127.0.0.1:$rec/items?page=1" >/dev/null
cp "$tmp/rec.ltsv" "$tmp/replay.ltsv"
lines=$(wc -l <"$tmp/replay.ltsv")

run() { # label, then keisoku's arguments
  local label=$1
  shift
  /usr/bin/time -f "%U %S %e" -o "$tmp/time" "$KEISOKU" bench "$@" --json "$tmp/out.json" >/dev/null
  read -r user sys wall <"$tmp/time"
  python3 - "$label" "$user" "$sys" "$wall" "$tmp/out.json" <<'PY'
import json, sys
label, user, sys_s, wall, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
r = json.load(open(path))
n = r["requests"]
cpu = user + sys_s
p99 = r["latency_ms"]["p99"]
print(f"| {label} | {n} | {r['rps']:.0f} | {cpu:.2f} | {cpu / max(n, 1) * 1e6:.1f} | {p99:.2f} |")
PY
}

echo "Log: $lines lines recorded at $RATE req/s for $DUR s; $CONNS connections, $THREADS thread(s); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| run | requests | req/s | CPU s (user+sys) | CPU us per request | p99 ms |"
echo "| --- | --- | --- | --- | --- | --- |"
run "plain open model (-R $RATE)" -R "$RATE" -d "${DUR}s" "${common[@]}" "http://127.0.0.1:$quiet/items?page=1"
run "replay of the log (--speed 1)" --replay "$tmp/replay.ltsv" "${common[@]}" "http://127.0.0.1:$quiet"
