#!/usr/bin/env bash
# Each demo knob's cost: throughput and p99 of the demo target with only
# that knob naive vs everything tuned, side by side.
#
# Every `keisoku demo --knob K` invocation runs the knob-naive target and
# then the all-tuned one under the same load (the load engine of
# `keisoku bench`: closed model, the 8 rotating sample bid requests), so
# each repetition yields one naive/tuned pair measured seconds apart on
# the same noisy machine; the table reports medians of the ratios.
#
# usage: bench/demo-knobs.sh [KEISOKU_BIN] [REPETITIONS] [CONNECTIONS] [PHASE]
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${1:-target/release/keisoku}
reps=${2:-3}
conns=${3:-32}
phase=${4:-6s}
out=bench/out/demo-knobs
mkdir -p "$out"

if [[ ! -x $bin ]]; then
  echo "building $bin" >&2
  cargo build --release -p keisoku >&2
fi

knobs=(json-cache formatter per-request-init sync-log-rollover single-worker no-keepalive sync-external-call unpinned)
for rep in $(seq 1 "$reps"); do
  for k in "${knobs[@]}"; do
    echo "rep $rep/$reps: $k" >&2
    "$bin" demo --knob "$k" --sweep "$conns" --step-duration "$phase" --warmup 1s \
      --store "$out/runs.db" --out-dir "$out/pages" --json "$out/$k.$rep.json" >/dev/null || true
  done
done
echo "rep 1: all knobs naive" >&2
"$bin" demo --sweep "$conns" --step-duration "$phase" --warmup 1s \
  --store "$out/runs.db" --out-dir "$out/pages" --json "$out/all.1.json" >/dev/null || true

python3 - "$bin" "$out" "$reps" "$conns" "${knobs[@]}" all <<'EOF'
import json, statistics, subprocess, sys, os
binary, out, reps, conns, names = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]

def recorded(run_id):
    """Migrations per request and per core-second of the stored naive run."""
    try:
        doc = json.loads(subprocess.run(
            [binary, "export", run_id, "--format", "json", "--store", os.path.join(out, "runs.db")],
            capture_output=True, check=True).stdout)
    except Exception:
        return None
    cores = max(doc["run"]["machine"]["cores"], 1)
    mig = next((s for s in doc["series"] if s["name"] == "proc.migrations"), None)
    phases = [p for p in doc["phases"] if not p["warmup"]]
    if not mig or not phases:
        return None
    a, b = phases[0]["start_ms"], phases[-1]["end_ms"]
    pts = [v for t, v in zip(mig["t_ms"], mig["v"]) if a < t <= b and v is not None]
    rps = doc["results"].get("rps") or 0
    if not pts or rps <= 0:
        return None
    rate = sum(pts) / len(pts)
    return rate / rps, rate / cores

print(f"| naive knob | naive req/s | tuned req/s | tuned/naive | naive p99 | tuned p99 | naive-side finding (top problem) | naive-side evidence per request |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for name in names:
    rows, found, mig = [], [], []
    for rep in range(1, reps + 1):
        path = os.path.join(out, f"{name}.{rep}.json")
        if not os.path.exists(path):
            continue
        doc = json.load(open(path))
        sides = doc["sides"]
        if len(sides) != 2:
            continue
        n, t = (s["report"]["phases"][-1] for s in sides)
        problems = [f["id"] for f in sides[0].get("findings", []) if f.get("severity") != "info"]
        found.append(problems[0] if problems else "none")
        if sides[0].get("run_id"):
            m = recorded(sides[0]["run_id"])
            if m:
                mig.append(m)
        rows.append((n["rps"], t["rps"], t["rps"] / max(n["rps"], 1e-9),
                     n["latency_ms"]["p99"], t["latency_ms"]["p99"], sides[0]["target_stats"] or {}))
    if not rows:
        continue
    med = lambda i: statistics.median(r[i] for r in rows)
    st = rows[-1][5]
    req = max(st.get("requests", 1), 1)
    ev = {
        "json-cache": f'{st.get("cache_json_parses",0)/req:.2f} cache JSON parses',
        "formatter": f'{st.get("regex_compiles",0)/req:.2f} regex compiles',
        "per-request-init": f'{st.get("config_loads",0)/req:.2f} config loads',
        "sync-log-rollover": f'{st.get("log_rollovers_blocking",0)} rollovers in requests, longest {st.get("log_rollover_max_ns",0)/1e6:.0f} ms',
        "single-worker": f'{st.get("workers",0)} worker',
        "no-keepalive": f'{st.get("backend_connects",0)/req:.2f} backend connects',
        "sync-external-call": f'{st.get("external_wait_ns",0)/req/1e6:.1f} ms waiting on the logger',
        "unpinned": f'{st.get("workers_pinned",0)} pinned workers'
            + (f', {statistics.median(m[0] for m in mig):.4f} migrations/request, {statistics.median(m[1] for m in mig):.1f}/s per core' if mig else ''),
        "all": "every knob naive",
    }[name]
    hits = ", ".join(f"{k} {found.count(k)}/{len(found)}" for k in sorted(set(found)))
    print(f"| {name} | {med(0):.0f} | {med(1):.0f} | {med(2):.2f}x | {med(3):.1f} ms | {med(4):.1f} ms | {hits} | {ev} |")
print(f"\n{len(names)} rows, {reps} repetitions (all: 1), {conns} connections, medians")
EOF
