#!/usr/bin/env bash
# Import speed and memory of a 1,000,000-line JMeter JTL (CSV, JMeter 5's default columns):
# `keisoku import` into an empty recorded run, under /usr/bin/time -v. Usage:
#   bench/import-jtl.sh [KEISOKU_BIN] [LINES]
# The JTL (about 98 MB) and the store live in a temporary directory removed at the end.
set -euo pipefail
bin=${1:-target/release/keisoku}
lines=${2:-1000000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$dir/big.jtl" "$lines" <<'PY'
import random, sys
random.seed(1)
t0 = 1795519723895
with open(sys.argv[1], "w") as f:
    f.write("timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,"
            "failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect\n")
    for i in range(int(sys.argv[2])):
        ts, el = t0 + i // 2, random.randint(1, 50)  # 2,000 requests a second, 1-50 ms each
        if i % 50 == 0:
            f.write(f"{ts},{el},GET /fail,503,Service Unavailable,users 1-{i%8+1},text,false,,317,120,8,8,http://127.0.0.1/fail,{el},0,0\n")
        else:
            f.write(f"{ts},{el},GET /ok,200,OK,users 1-{i%8+1},text,true,,153,120,8,8,http://127.0.0.1/ok,{el},0,0\n")
PY
"$bin" record --profile none --name big --store "$dir/runs.db" -- true >/dev/null 2>&1
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/time -v "$bin" import big "$dir/big.jtl" --store "$dir/runs.db" 2>&1 >/dev/null |
  grep -E "imported|Elapsed|User time|System time|Maximum resident"
