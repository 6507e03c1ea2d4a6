#!/usr/bin/env bash
# Request templates' cost: CPU per request of `keisoku bench` with and
# without templates, side by side with wrk plain and wrk with a Lua
# request() that varies each request the same way (wrk's own way to do it).
# nginx (1 worker, `return 200`, no access log) on 127.0.0.1; same threads and
# connections for every tool; runs alternate; REPS repetitions; medians.
#
#   bench/templates.sh                       # defaults below
#   REPS=7 DUR=10 CONNS=50 THREADS=1 bench/templates.sh
#
# The templated request: path /t/{{seq}}?r={{rand_int 1 1000000}} and a header
# X-Id: {{uuid}} (keisoku); the Lua script builds the same shape with a
# counter, math.random and a random 32-hex-digit id (wrk).
# Prints a Markdown section for bench/RESULTS.md on stdout; raw numbers go to
# bench/out/templates.tsv. Installs nginx-light and wrk when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

REPS=${REPS:-5}
DUR=${DUR:-5}
CONNS=${CONNS:-50}
THREADS=${THREADS:-1}

need_apt=()
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || need_apt+=(nginx-light)
command -v wrk >/dev/null 2>&1 || need_apt+=(wrk)
[[ -x /usr/bin/time ]] || need_apt+=(time)
if ((${#need_apt[@]})); then
  SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
if [[ -z "${KEISOKU:-}" ]]; then
  echo "templates: building keisoku (release)" >&2
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
  client_body_temp_path $tmp/body; proxy_temp_path $tmp/proxy; fastcgi_temp_path $tmp/fastcgi;
  uwsgi_temp_path $tmp/uwsgi; scgi_temp_path $tmp/scgi;
  server { listen 127.0.0.1:$port; location / { return 200 "ok\n"; } }
}
EOF
"$NGINX" -c "$tmp/nginx.conf" -p "$tmp" &
nginx_pid=$!
trap 'kill $nginx_pid 2>/dev/null; wait $nginx_pid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 50); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && break
  sleep 0.1
done
BASE="http://127.0.0.1:$port"
cat >"$tmp/vary.lua" <<'EOF'
local n = 0
local hex = "0123456789abcdef"
request = function()
  n = n + 1
  local id = {}
  for i = 1, 32 do
    local k = math.random(16)
    id[i] = hex:sub(k, k)
  end
  return wrk.format("GET", "/t/" .. n .. "?r=" .. math.random(1000000), { ["X-Id"] = table.concat(id) })
end
EOF

# run TOOL -> prints "requests rps cpu_seconds"
run() {
  local tool=$1 log="$tmp/$1.out" tf="$tmp/$1.time"
  case $tool in
    keisoku|keisoku-templates)
      local url="$BASE/" hdr=()
      if [[ $tool == keisoku-templates ]]; then
        url="$BASE/t/{{seq}}?r={{rand_int 1 1000000}}"; hdr=(-H 'X-Id: {{uuid}}')
      fi
      /usr/bin/time -f "%U %S" -o "$tf" "$KEISOKU" bench -t "$THREADS" -c "$CONNS" -d "${DUR}s" "${hdr[@]}" --json "$tmp/k.json" "$url" >"$log" 2>&1 || true
      python3 -c "import json; d=json.load(open('$tmp/k.json')); print(d['requests'], d['rps'])" ;;
    wrk|wrk-lua)
      local script=()
      [[ $tool == wrk-lua ]] && script=(-s "$tmp/vary.lua")
      /usr/bin/time -f "%U %S" -o "$tf" wrk -t "$THREADS" -c "$CONNS" -d "${DUR}s" "${script[@]}" "$BASE/" >"$log" 2>&1 || true
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

tsv="$out/templates.tsv"
echo -e "rep\ttool\trequests\trps\tcpu_s" >"$tsv"
tools=(keisoku keisoku-templates wrk wrk-lua)
n=${#tools[@]}
for rep in $(seq 1 "$REPS"); do
  for k in $(seq 0 $((n - 1))); do
    tool=${tools[$(((k + rep) % n))]}
    read -r reqs rps cpu <<<"$(run "$tool")"
    echo -e "$rep\t$tool\t$reqs\t$rps\t$cpu" >>"$tsv"
    echo "templates: rep $rep $tool: $rps req/s, $reqs requests, ${cpu}s CPU" >&2
  done
done

python3 - "$tsv" "$REPS" "$DUR" "$CONNS" "$THREADS" <<'PY'
import csv, statistics, sys, subprocess, platform, datetime
path, reps, dur, conns, threads = sys.argv[1:]
rows = list(csv.DictReader(open(path), delimiter="\t"))
by = {}
for r in rows:
    reqs = int(r["requests"]); rps = float(r["rps"]); cpu = float(r["cpu_s"])
    by.setdefault(r["tool"], []).append((rps, cpu / reqs * 1e6 if reqs else float("nan")))
med = {t: (statistics.median(v[0] for v in vals), statistics.median(v[1] for v in vals)) for t, vals in by.items()}
cpu_model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
load = open("/proc/loadavg").read().split()[0]
print(f"`REPS={reps} DUR={dur} CONNS={conns} THREADS={threads} bench/templates.sh` on {datetime.date.today()}: "
      f"nginx (1 worker, `return 200`) on 127.0.0.1; {nproc} cores, {cpu_model}, kernel {platform.release()}, "
      f"load average {load} at the end. Medians of {reps} alternating runs of {dur} s.\n")
print("| tool | request | req/s | CPU us per request | ratio to wrk (same request kind) |")
print("| --- | --- | ---: | ---: | ---: |")
pairs = [("keisoku", "fixed", "wrk"), ("wrk", "fixed", "wrk"),
         ("keisoku-templates", "templated", "wrk-lua"), ("wrk-lua", "templated (Lua request())", "wrk-lua")]
for t, kind, peer in pairs:
    if t not in med:
        continue
    rps, cpu = med[t]
    ratio = f"{cpu / med[peer][1]:.2f}" if peer in med else "-"
    print(f"| {t} | {kind} | {rps:,.0f} | {cpu:.2f} | {ratio} |")
if "keisoku" in med and "keisoku-templates" in med:
    print(f"\nTemplates cost keisoku {med['keisoku-templates'][1] / med['keisoku'][1]:.2f}x its fixed-request CPU per request.")
print()
print("Raw runs (req/s, CPU us/request):", "; ".join(f"{t}: " + ", ".join(f"{v[0]:.0f}/{v[1]:.2f}" for v in vals) for t, vals in by.items()))
PY
