#!/usr/bin/env bash
# Load generators side by side: keisoku bench vs wrk vs oha against nginx
# (one worker, `return 200`) on 127.0.0.1. Same threads and connections for
# every tool, runs alternate (k w o, w o k, o k w, ...), REPS repetitions;
# reports median requests/s and the generator's CPU seconds per 100k
# requests (user+sys of the tool's process, from /usr/bin/time), as ratios
# to wrk. Installs its peers idempotently (Debian nginx-light and wrk,
# `cargo install oha --root bench/tools`).
#
#   bench/loadgen.sh                 # defaults below
#   REPS=7 DUR=10 CONNS=100 THREADS=1 bench/loadgen.sh
#   MODE=syscalls DUR=3 bench/loadgen.sh   # syscalls per request, keisoku vs wrk
#
# On a 2-core machine nginx and the generator share the cores; THREADS=1
# (the default) keeps one core for nginx. Prints a Markdown section for
# bench/RESULTS.md on stdout; raw numbers go to bench/out/loadgen.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."

REPS=${REPS:-5}
DUR=${DUR:-5}
CONNS=${CONNS:-50}
THREADS=${THREADS:-1}
TOOLS=${TOOLS:-"keisoku wrk oha"}

need_apt=()
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || need_apt+=(nginx-light)
command -v wrk >/dev/null 2>&1 || need_apt+=(wrk)
[[ -x /usr/bin/time ]] || need_apt+=(time)
if ((${#need_apt[@]})); then
  SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
if [[ " $TOOLS " == *" oha "* && ! -x bench/tools/bin/oha ]]; then
  echo "loadgen: installing oha into bench/tools" >&2
  cargo install oha --locked --root bench/tools >&2
fi
# KEISOKU=path/to/keisoku skips the build (e.g. to measure a given binary).
if [[ -z "${KEISOKU:-}" ]]; then
  echo "loadgen: building keisoku (release)" >&2
  cargo build --release -q -p keisoku
  KEISOKU=${CARGO_TARGET_DIR:-$PWD/target}/release/keisoku
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

out=bench/out
mkdir -p "$out"
tmp=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
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
    listen 127.0.0.1:$port;
    location / { return 200 "ok\n"; }
  }
}
EOF
# SPLIT=1: nginx on the last core, every generator on the others
# (taskset), so tools do not randomly share nginx's core; SPLIT=0 lets the
# scheduler place everything (default: on a shared machine pinning concentrates
# the other load on the pinned cores).
SPLIT=${SPLIT:-0}
ncpu=$(nproc)
GEN=()
if [[ $SPLIT == 1 && $ncpu -ge 2 ]] && command -v taskset >/dev/null; then
  GEN=(taskset -c "0-$((ncpu - 2))")
  taskset -c "$((ncpu - 1))" "$NGINX" -c "$tmp/nginx.conf" -p "$tmp" &
else
  "$NGINX" -c "$tmp/nginx.conf" -p "$tmp" &
fi
nginx_pid=$!
trap 'kill $nginx_pid 2>/dev/null; wait $nginx_pid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 50); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && break
  sleep 0.1
done
URL="http://127.0.0.1:$port/"

# run TOOL -> prints "requests rps cpu_seconds"
run() {
  local tool=$1 log="$tmp/$1.out" tf="$tmp/$1.time"
  case $tool in
    keisoku)
      /usr/bin/time -f "%U %S" -o "$tf" "${GEN[@]}" "$KEISOKU" bench -t "$THREADS" -c "$CONNS" -d "${DUR}s" --json "$tmp/k.json" "$URL" >"$log" 2>&1 || true
      python3 -c "import json; d=json.load(open('$tmp/k.json')); print(d['requests'], d['rps'])" ;;
    wrk)
      /usr/bin/time -f "%U %S" -o "$tf" "${GEN[@]}" wrk -t "$THREADS" -c "$CONNS" -d "${DUR}s" "$URL" >"$log" 2>&1 || true
      python3 - "$log" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
n = int(re.search(r"(\d+) requests in", t).group(1))
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
print(n, rps)
PY
      ;;
    oha)
      TOKIO_WORKER_THREADS=$THREADS /usr/bin/time -f "%U %S" -o "$tf" "${GEN[@]}" bench/tools/bin/oha --no-tui --output-format json -c "$CONNS" -z "${DUR}s" "$URL" >"$log" 2>/dev/null || true
      python3 - "$log" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["summary"]
n = sum(d.get("statusCodeDistribution", {}).values())
print(n, s["requestsPerSec"])
PY
      ;;
  esac | tr '\n' ' '
  awk '{print $1 + $2}' "$tf"
}

# MODE=syscalls: count the generator's syscalls per request under strace
# (slow, so only the ratio means anything): the number that decided epoll
# (edge-triggered, registered once) over io_uring for keisoku's engine.
if [[ "${MODE:-}" == syscalls ]]; then
  command -v strace >/dev/null || { echo "loadgen: MODE=syscalls needs strace" >&2; exit 1; }
  echo "| tool | requests | syscalls | per request | top calls per request |"
  echo "| --- | ---: | ---: | ---: | --- |"
  for tool in keisoku wrk; do
    st="$tmp/$tool.strace"
    case $tool in
      keisoku) strace -f -c -o "$st" "$KEISOKU" bench -t "$THREADS" -c "$CONNS" -d "${DUR}s" --json "$tmp/k.json" "$URL" >/dev/null 2>&1 || true
               reqs=$(python3 -c "import json; print(json.load(open('$tmp/k.json'))['requests'])") ;;
      wrk) strace -f -c -o "$st" wrk -t "$THREADS" -c "$CONNS" -d "${DUR}s" "$URL" >"$tmp/w.out" 2>&1 || true
           reqs=$(grep -oE '[0-9]+ requests in' "$tmp/w.out" | grep -oE '^[0-9]+') ;;
    esac
    python3 - "$st" "$tool" "$reqs" <<'PY'
import sys
path, tool, reqs = sys.argv[1], sys.argv[2], int(sys.argv[3])
calls = {}
for line in open(path):
    f = line.split()
    if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
        calls[f[-1]] = int(f[3])
total = sum(calls.values())
top = sorted(calls.items(), key=lambda kv: -kv[1])[:4]
print(f"| {tool} | {reqs} | {total} | {total / reqs:.2f} | " + ", ".join(f"{k} {v / reqs:.2f}" for k, v in top) + " |")
PY
  done
  exit 0
fi

tsv="$out/loadgen.tsv"
echo -e "rep\ttool\trequests\trps\tcpu_s" >"$tsv"
read -r -a tools <<<"$TOOLS"
n=${#tools[@]}
for rep in $(seq 1 "$REPS"); do
  for k in $(seq 0 $((n - 1))); do
    tool=${tools[$(((k + rep) % n))]}
    read -r reqs rps cpu <<<"$(run "$tool")"
    echo -e "$rep\t$tool\t$reqs\t$rps\t$cpu" >>"$tsv"
    echo "loadgen: rep $rep $tool: $rps req/s, $reqs requests, ${cpu}s CPU" >&2
  done
done

python3 - "$tsv" "$REPS" "$DUR" "$CONNS" "$THREADS" "$SPLIT" <<'PY'
import csv, statistics, sys, subprocess, platform, datetime
path, reps, dur, conns, threads, split = sys.argv[1:]
rows = list(csv.DictReader(open(path), delimiter="\t"))
by = {}
for r in rows:
    reqs = int(r["requests"]); rps = float(r["rps"]); cpu = float(r["cpu_s"])
    by.setdefault(r["tool"], []).append((rps, cpu / reqs * 1e5 if reqs else float("nan")))
med = {t: (statistics.median(v[0] for v in vals), statistics.median(v[1] for v in vals)) for t, vals in by.items()}
cpu_model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
print(f"### Load generators vs wrk ({datetime.date.today()})\n")
print(f"`REPS={reps} DUR={dur} CONNS={conns} THREADS={threads} SPLIT={split} bench/loadgen.sh` — nginx (1 worker, `return 200`) on 127.0.0.1"
      + (", pinned to the last core, generators on the others; " if split == "1" else "; ")
      + 
      f"{nproc} cores, {cpu_model}, kernel {platform.release()}. Medians of {reps} alternating runs of {dur}s each.\n")
print("| tool | req/s (median) | ratio to wrk | CPU s per 100k req | ratio to wrk |")
print("| --- | ---: | ---: | ---: | ---: |")
w = med.get("wrk")
for t in ["keisoku", "wrk", "oha"]:
    if t not in med:
        continue
    rps, cpu = med[t]
    rr = f"{rps / w[0]:.2f}" if w else "-"
    cr = f"{cpu / w[1]:.2f}" if w else "-"
    print(f"| {t} | {rps:,.0f} | {rr} | {cpu:.3f} | {cr} |")
print()
print("Raw runs (req/s):", "; ".join(f"{t}: " + ", ".join(f"{v[0]:.0f}" for v in vals) for t, vals in by.items()))
PY
