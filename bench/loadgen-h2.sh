#!/usr/bin/env bash
# keisoku bench --h2 vs h2load (nghttp2-client) over HTTP/2: with TLS (ALPN
# h2) and prior-knowledge h2c, against nginx (one worker, `return 200`, a
# self-signed certificate made here) on 127.0.0.1. Same threads, connections
# and streams per connection for both tools (keisoku --streams M, h2load
# -m M), runs alternate (k h, h k, ...), REPS repetitions per scheme;
# reports median requests/s and the generator's CPU seconds per 100k
# requests (user+sys of the tool's process, from /usr/bin/time), as ratios
# to h2load. Installs its peers idempotently (Debian nginx-light,
# nghttp2-client, openssl, time).
#
#   bench/loadgen-h2.sh                                  # defaults below
#   REPS=7 DUR=5 CONNS=10 STREAMS=10 THREADS=1 bench/loadgen-h2.sh
#
# Prints a Markdown section for bench/RESULTS.md on stdout; raw numbers go
# to bench/out/loadgen-h2.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."

REPS=${REPS:-5}
DUR=${DUR:-5}
CONNS=${CONNS:-10}
STREAMS=${STREAMS:-10}
THREADS=${THREADS:-1}

need_apt=()
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || need_apt+=(nginx-light)
command -v h2load >/dev/null 2>&1 || need_apt+=(nghttp2-client)
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
[[ -x /usr/bin/time ]] || need_apt+=(time)
if ((${#need_apt[@]})); then
  SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
# KEISOKU=path/to/keisoku skips the build (e.g. to measure a given binary).
if [[ -z "${KEISOKU:-}" ]]; then
  echo "loadgen-h2: building keisoku (release)" >&2
  cargo build --release -q -p keisoku
  KEISOKU=${CARGO_TARGET_DIR:-$PWD/target}/release/keisoku
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

out=bench/out
mkdir -p "$out"
tmp=$(mktemp -d)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1 2>/dev/null
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# PORT and TPORT pin nginx's h2c and TLS ports (for hosts where ports are shared out).
port=${PORT:-$(free_port)}
tport=${TPORT:-$(free_port)}
# `listen ... http2` is what nginx 1.22 (Debian 12) reads; streams per
# connection are capped at 128 by nginx's default http2_max_concurrent_streams.
cat >"$tmp/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $tmp/nginx.pid;
error_log $tmp/error.log;
events { worker_connections 10240; }
http {
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 600s;
  client_body_temp_path $tmp/body;
  proxy_temp_path $tmp/proxy;
  fastcgi_temp_path $tmp/fastcgi;
  uwsgi_temp_path $tmp/uwsgi;
  scgi_temp_path $tmp/scgi;
  server {
    listen 127.0.0.1:$port http2;
    location / { return 200 "ok\n"; }
  }
  server {
    listen 127.0.0.1:$tport ssl http2;
    ssl_certificate $tmp/cert.pem;
    ssl_certificate_key $tmp/key.pem;
    location / { return 200 "ok\n"; }
  }
}
EOF
"$NGINX" -c "$tmp/nginx.conf" -p "$tmp" &
nginx_pid=$!
trap 'kill $nginx_pid 2>/dev/null; wait $nginx_pid 2>/dev/null; rm -rf "$tmp"' EXIT
for p in $port $tport; do
  for _ in $(seq 50); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$p),0.2)" 2>/dev/null && break
    sleep 0.1
  done
done

# run TOOL URL -> prints "requests rps cpu_seconds"
run() {
  local tool=$1 url=$2 log="$tmp/$1.out" tf="$tmp/$1.time"
  case $tool in
    keisoku)
      /usr/bin/time -f "%U %S" -o "$tf" "$KEISOKU" bench --h2 -k --streams "$STREAMS" -t "$THREADS" -c "$CONNS" -d "${DUR}s" --json "$tmp/k.json" "$url" >"$log" 2>&1 || true
      python3 -c "import json; d=json.load(open('$tmp/k.json')); assert d['protocol'].startswith('h2'); print(d['requests'] - d['errors'], d['rps'])" ;;
    h2load)
      /usr/bin/time -f "%U %S" -o "$tf" h2load -t "$THREADS" -c "$CONNS" -m "$STREAMS" -D "$DUR" "$url" >"$log" 2>&1 || true
      python3 - "$log" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
ok = int(re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", t).group(1))
rps = float(re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", t).group(1))
print(ok, rps)
PY
      ;;
  esac | tr '\n' ' '
  awk '{print $1 + $2}' "$tf"
}

tsv="$out/loadgen-h2.tsv"
printf "scheme\ttool\trep\trequests\trps\tcpu_s\n" >"$tsv"
for scheme in h2 h2c; do
  url="http://127.0.0.1:$port/"
  [[ $scheme == h2 ]] && url="https://127.0.0.1:$tport/"
  tools=(keisoku h2load)
  for rep in $(seq "$REPS"); do
    order=("${tools[@]}")
    ((rep % 2 == 0)) && order=($(printf '%s\n' "${tools[@]}" | tac))
    for tool in "${order[@]}"; do
      read -r n rps cpu < <(run "$tool" "$url")
      printf "%s\t%s\t%s\t%s\t%s\t%s\n" "$scheme" "$tool" "$rep" "$n" "$rps" "$cpu" >>"$tsv"
    done
  done
done

load=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$tsv" "$REPS" "$DUR" "$CONNS" "$STREAMS" "$THREADS" "$load" <<'PY'
import csv, statistics, sys, datetime
path, reps, dur, conns, streams, threads, load = sys.argv[1:]
rows = list(csv.DictReader(open(path), delimiter="\t"))
def med(scheme, tool, f):
    return statistics.median(f(r) for r in rows if r["scheme"] == scheme and r["tool"] == tool)
print(f"## load generator over HTTP/2: keisoku bench --h2 vs h2load ({conns} connections x {streams} streams)\n")
print(f"Command: `REPS={reps} DUR={dur} CONNS={conns} STREAMS={streams} THREADS={threads} bench/loadgen-h2.sh`, "
      f"{datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, load average before the summary {load}.\n")
print("| protocol | tool | req/s (median) | CPU s per 100k requests | CPU per request vs h2load |")
print("| --- | --- | ---: | ---: | ---: |")
for scheme in ("h2", "h2c"):
    base = med(scheme, "h2load", lambda r: float(r["cpu_s"]) / max(int(r["requests"]), 1) * 1e5)
    for tool in ("keisoku", "h2load"):
        rps = med(scheme, tool, lambda r: float(r["rps"]))
        cpu = med(scheme, tool, lambda r: float(r["cpu_s"]) / max(int(r["requests"]), 1) * 1e5)
        print(f"| {scheme} | {tool} | {rps:,.0f} | {cpu:.2f} | {cpu / base:.2f}x |")
PY
