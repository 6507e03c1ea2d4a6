#!/usr/bin/env bash
# keisoku bench vs wrk over TLS (https, keep-alive) and over plain HTTP/1.1,
# against nginx (one worker, `return 200`, a self-signed certificate made
# here with openssl) on 127.0.0.1. Same threads and connections for both
# tools, runs alternate (k w, w k, ...), REPS repetitions per scheme; reports
# median requests/s and the generator's CPU seconds per 100k requests
# (user+sys of the tool's process, from /usr/bin/time), as ratios to wrk.
# Installs its peers idempotently (Debian nginx-light, wrk, openssl, time).
#
#   bench/loadgen-tls.sh                       # defaults below
#   REPS=7 DUR=5 CONNS=50 THREADS=1 bench/loadgen-tls.sh
#   CLOSE=1 CONNS=10 bench/loadgen-tls.sh      # a new connection (and TLS handshake) per request
#
# With CLOSE=1 both tools send `Connection: close` (wrk reconnects after
# each answer; keisoku runs --no-keepalive), so the TLS rows measure
# handshakes. keisoku resumes sessions by default, wrk does not: the
# keisoku-full row (--no-tls-resume) is the like-for-like one.
#
# Prints a Markdown section for bench/RESULTS.md on stdout; raw numbers go to
# bench/out/loadgen-tls.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."

REPS=${REPS:-5}
DUR=${DUR:-5}
CONNS=${CONNS:-50}
THREADS=${THREADS:-1}
CLOSE=${CLOSE:-0}

need_apt=()
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || need_apt+=(nginx-light)
command -v wrk >/dev/null 2>&1 || need_apt+=(wrk)
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
[[ -x /usr/bin/time ]] || need_apt+=(time)
if ((${#need_apt[@]})); then
  SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
# KEISOKU=path/to/keisoku skips the build (e.g. to measure a given binary).
if [[ -z "${KEISOKU:-}" ]]; then
  echo "loadgen-tls: building keisoku (release)" >&2
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
port=$(free_port)
tport=$(free_port)
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
  ssl_session_cache shared:S:10m;
  client_body_temp_path $tmp/body;
  proxy_temp_path $tmp/proxy;
  fastcgi_temp_path $tmp/fastcgi;
  uwsgi_temp_path $tmp/uwsgi;
  scgi_temp_path $tmp/scgi;
  server {
    listen 127.0.0.1:$port;
    location / { return 200 "ok\n"; }
  }
  server {
    listen 127.0.0.1:$tport ssl;
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
  local kclose=() wclose=()
  if [[ $CLOSE == 1 ]]; then kclose=(--no-keepalive); wclose=(-H "Connection: close"); fi
  case $tool in
    keisoku|keisoku-full)
      local extra=(-k)
      [[ $tool == keisoku-full ]] && extra+=(--no-tls-resume)
      /usr/bin/time -f "%U %S" -o "$tf" "$KEISOKU" bench "${extra[@]}" "${kclose[@]}" -t "$THREADS" -c "$CONNS" -d "${DUR}s" --json "$tmp/k.json" "$url" >"$log" 2>&1 || true
      python3 -c "import json; d=json.load(open('$tmp/k.json')); print(d['requests'], d['rps'])" ;;
    wrk)
      /usr/bin/time -f "%U %S" -o "$tf" wrk "${wclose[@]}" -t "$THREADS" -c "$CONNS" -d "${DUR}s" "$url" >"$log" 2>&1 || true
      python3 - "$log" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
n = int(re.search(r"(\d+) requests in", t).group(1))
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
print(n, rps)
PY
      ;;
  esac | tr '\n' ' '
  awk '{print $1 + $2}' "$tf"
}

tsv="$out/loadgen-tls.tsv"
printf "scheme\ttool\trep\trequests\trps\tcpu_s\n" >"$tsv"
for scheme in https http; do
  url="$scheme://127.0.0.1:$port/"
  [[ $scheme == https ]] && url="https://127.0.0.1:$tport/"
  tools=(keisoku wrk)
  [[ $CLOSE == 1 && $scheme == https ]] && tools=(keisoku keisoku-full wrk)
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
python3 - "$tsv" "$REPS" "$DUR" "$CONNS" "$THREADS" "$CLOSE" "$load" <<'PY'
import csv, statistics, sys, datetime
path, reps, dur, conns, threads, close, load = sys.argv[1:]
rows = list(csv.DictReader(open(path), delimiter="\t"))
def med(scheme, tool, f):
    return statistics.median(f(r) for r in rows if r["scheme"] == scheme and r["tool"] == tool)
mode = "a new connection per request (Connection: close)" if close == "1" else "keep-alive"
print(f"## load generator over TLS and plain HTTP/1.1: keisoku bench vs wrk ({mode})\n")
print(f"Command: `REPS={reps} DUR={dur} CONNS={conns} THREADS={threads} CLOSE={close} bench/loadgen-tls.sh`, "
      f"{datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, load average before the summary {load}.\n")
print("| scheme | tool | req/s (median) | CPU s per 100k requests | CPU per request vs wrk |")
print("| --- | --- | ---: | ---: | ---: |")
for scheme in ("https", "http"):
    tools = sorted({r["tool"] for r in rows if r["scheme"] == scheme}, key=lambda t: (t == "wrk", t))
    base = med(scheme, "wrk", lambda r: float(r["cpu_s"]) / max(int(r["requests"]), 1) * 1e5)
    for tool in tools:
        rps = med(scheme, tool, lambda r: float(r["rps"]))
        cpu = med(scheme, tool, lambda r: float(r["cpu_s"]) / max(int(r["requests"]), 1) * 1e5)
        print(f"| {scheme} | {tool} | {rps:,.0f} | {cpu:.2f} | {cpu / base:.2f}x |")
PY
