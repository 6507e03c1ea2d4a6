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
      --json "$out/$k.$rep.json" >/dev/null || true
  done
done
echo "rep 1: all knobs naive" >&2
"$bin" demo --sweep "$conns" --step-duration "$phase" --warmup 1s --json "$out/all.1.json" >/dev/null || true

python3 - "$out" "$reps" "$conns" "${knobs[@]}" all <<'EOF'
import json, statistics, sys, os
out, reps, conns, names = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
print(f"| naive knob | naive req/s | tuned req/s | tuned/naive | naive p99 | tuned p99 | naive-side evidence per request |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for name in names:
    rows = []
    for rep in range(1, reps + 1):
        path = os.path.join(out, f"{name}.{rep}.json")
        if not os.path.exists(path):
            continue
        doc = json.load(open(path))
        sides = doc["sides"]
        if len(sides) != 2:
            continue
        n, t = (s["report"]["phases"][-1] for s in sides)
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
        "unpinned": f'{st.get("workers_pinned",0)} pinned workers',
        "all": "every knob naive",
    }[name]
    print(f"| {name} | {med(0):.0f} | {med(1):.0f} | {med(2):.2f}x | {med(3):.1f} ms | {med(4):.1f} ms | {ev} |")
print(f"\n{len(names)} rows, {reps} repetitions (all: 1), {conns} connections, medians")
EOF
