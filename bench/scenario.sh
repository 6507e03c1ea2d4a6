#!/usr/bin/env bash
# Scenarios' cost: CPU per request of `keisoku bench` on one URL (the plain
# engine) and of a 1-step scenario on the same URL (each answer captured,
# judged and the next request built by the virtual user), plus the same
# step with a status check and a body check. nginx (1 worker, `return 200`,
# no access log) on 127.0.0.1; same threads and connections; runs
# alternate; REPS repetitions; medians.
#
#   bench/scenario.sh                        # defaults below
#   REPS=7 DUR=10 CONNS=50 THREADS=1 bench/scenario.sh
#
# Prints a Markdown section for bench/RESULTS.md on stdout; raw numbers go to
# bench/out/scenario.tsv. Installs nginx-light when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

REPS=${REPS:-5}
DUR=${DUR:-5}
CONNS=${CONNS:-50}
THREADS=${THREADS:-1}

need_apt=()
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || need_apt+=(nginx-light)
[[ -x /usr/bin/time ]] || need_apt+=(time)
if ((${#need_apt[@]})); then
  SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
if [[ -z "${KEISOKU:-}" ]]; then
  echo "scenario: building keisoku (release)" >&2
  cargo build --release -q -p keisoku
  KEISOKU=${CARGO_TARGET_DIR:-$PWD/target}/release/keisoku
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

out=bench/out
mkdir -p "$out"
tmp=$(mktemp -d)
# PORT=N pins nginx's port (for hosts where ports are shared out); else a free one.
port=${PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
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
printf 'steps:\n  - name: root\n    url: /\n' >"$tmp/one.yaml"
printf 'steps:\n  - name: root\n    url: /\n    checks:\n      status: 200\n      body_contains: ok\n' >"$tmp/checked.yaml"

# run TOOL -> prints "requests rps cpu_seconds"
run() {
  local tool=$1 log="$tmp/$1.out" tf="$tmp/$1.time" sc=()
  case $tool in
    scenario) sc=(--scenario "$tmp/one.yaml") ;;
    scenario-checks) sc=(--scenario "$tmp/checked.yaml") ;;
  esac
  /usr/bin/time -f "%U %S" -o "$tf" "$KEISOKU" bench -t "$THREADS" -c "$CONNS" -d "${DUR}s" "${sc[@]}" --json "$tmp/k.json" "$BASE/" >"$log" 2>&1 || true
  python3 -c "import json; d=json.load(open('$tmp/k.json')); print(d['requests'], d['rps'])" | tr '\n' ' '
  awk '{print $1 + $2}' "$tf"
}

tsv="$out/scenario.tsv"
echo -e "rep\ttool\trequests\trps\tcpu_s" >"$tsv"
tools=(plain scenario scenario-checks)
n=${#tools[@]}
for rep in $(seq 1 "$REPS"); do
  for k in $(seq 0 $((n - 1))); do
    tool=${tools[$(((k + rep) % n))]}
    read -r reqs rps cpu <<<"$(run "$tool")"
    echo -e "$rep\t$tool\t$reqs\t$rps\t$cpu" >>"$tsv"
    echo "scenario: rep $rep $tool: $rps req/s, $reqs requests, ${cpu}s CPU" >&2
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
print(f"`REPS={reps} DUR={dur} CONNS={conns} THREADS={threads} bench/scenario.sh` on {datetime.date.today()}: "
      f"nginx (1 worker, `return 200`) on 127.0.0.1; {nproc} cores, {cpu_model}, kernel {platform.release()}, "
      f"load average {load} at the end. Medians of {reps} alternating runs of {dur} s.\n")
print("| run | req/s | CPU us per request | ratio to plain |")
print("| --- | ---: | ---: | ---: |")
names = {"plain": "plain engine, one URL", "scenario": "1-step scenario, no checks",
         "scenario-checks": "1-step scenario, status and body checks"}
for t in ["plain", "scenario", "scenario-checks"]:
    rps, us = med[t]
    print(f"| {names[t]} | {rps:.0f} | {us:.2f} | {us / med['plain'][1]:.2f} |")
print()
print("Raw (req/s, CPU us per request) per run:",
      "; ".join(f"{t} " + ", ".join(f"{r:.0f}/{u:.2f}" for r, u in v) for t, v in by.items()))
PY
