#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for SECONDS each (default 60), one
# after the other on one core (the machine's other cores stay free), seeding
# each corpus from the project's real test inputs. Not part of CI: it is
# slow by design (the suite only checks that fuzz/ builds).
#
#   scripts/fuzz.sh            # 60 s per target
#   scripts/fuzz.sh 300        # 5 min per target
#   scripts/fuzz.sh 30 pprof   # only the named targets
#
# Environment: FUZZ_SANITIZER (none|address, default none: the fuzzed
# crates hold no unsafe code, so AddressSanitizer finds nothing the
# compiler's own checks do not, at a third of the speed; overflow checks
# and debug assertions are on either way), FUZZ_RSS_MB (default 2048; one
# allocation above it is a crash too), FUZZ_TIMEOUT (seconds per input
# before it counts as a hang, default 10).
#
# Corpora go to fuzz/corpus/<target>/, crashes to fuzz/artifacts/<target>/,
# libFuzzer's output to fuzz/artifacts/logs/<target>.log (all git-ignored).
# Prints one line per target: seconds, runs, runs per second, crashes.
# Exit status: 0 when no target crashed, 1 otherwise (the inputs are
# listed), 2 on bad usage. An interrupted run stops its fuzzer and removes
# its temporary files.
set -euo pipefail
export LC_ALL=C # awk writes raw bytes

secs=${1:-60}
case $secs in
'' | *[!0-9]*)
    echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2
    exit 2
    ;;
esac
shift $(($# > 0 ? 1 : 0))
root=$(cd "$(dirname "$0")/.." && pwd)
fuzz=$root/fuzz
stacks=$root/crates/stacks/tests/data
logs=$root/crates/logs/tests/fixtures
runs=$root/crates/findings/tests/fixtures
sanitizer=${FUZZ_SANITIZER:-none}
rss=${FUZZ_RSS_MB:-2048}
hang=${FUZZ_TIMEOUT:-10}
# cargo-fuzz finds its binaries under fuzz/target; a CARGO_TARGET_DIR meant
# for the main workspace would send them elsewhere.
unset CARGO_TARGET_DIR

if ! rustup toolchain list | grep -q '^nightly'; then
    echo "fuzz: installing the nightly toolchain (libFuzzer needs it)" >&2
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz" >&2
    cargo install cargo-fuzz
fi

# Everything temporary (seed recordings, the files a target writes) lives in
# one directory, removed however the script ends; a running fuzzer is
# stopped with it.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/keisoku-fuzz.XXXXXX")
child=
cleanup() {
    if [ -n "$child" ]; then
        kill -- "-$child" 2>/dev/null || true
        wait "$child" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cd "$fuzz"
mapfile -t all < <(cargo fuzz list)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
for t in "${targets[@]}"; do
    printf '%s\n' "${all[@]}" | grep -qx -- "$t" || {
        echo "fuzz: no target $t (have: ${all[*]})" >&2
        exit 2
    }
done

# Seeds are small slices of the real inputs: libFuzzer mutates small inputs
# far faster, and its default maximum length follows the largest seed.
text() { case $1 in *.gz) gzip -dc "$1" ;; *) cat "$1" ;; esac; }

# Cuts a perf script text into pieces of whole samples (~2 KB each, at most
# 40), optionally prefixing each with a flags byte (collapse_perf's options).
perf_pieces() { # src dir prefix with_flags
    text "$1" | awk -v dir="$2" -v pre="$3" -v flags="$4" '
        BEGIN { RS = ""; n = 0; buf = "" }
        {
            buf = buf $0 "\n\n"
            if (length(buf) > 2000 && n < 40) { emit() }
        }
        END { if (buf != "" && n < 40) emit() }
        function emit(  f) {
            f = sprintf("%s/%s-%02d", dir, pre, n)
            if (flags) printf "%c", (n * 37 + 1) % 256 > f
            printf "%s", buf > f
            close(f); n++; buf = ""
        }'
}

# Cuts a line-oriented text into pieces of LINES lines (at most 40).
line_pieces() { # src dir prefix lines
    text "$1" | awk -v dir="$2" -v pre="$3" -v per="$4" '
        { f = sprintf("%s/%s-%02d", dir, pre, int((NR - 1) / per)) }
        (NR - 1) / per < 40 { print > f }'
}

# A Run JSON with every array cut to its first few elements: the shape of a
# real run (phases, series, routes, findings, profile) in a few KB.
trim_json() { # src dst keep
    python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
def cut(v, keep):
    if isinstance(v, list):
        return [cut(x, keep) for x in v[:keep]]
    if isinstance(v, dict):
        return {k: cut(x, keep) for k, x in v.items()}
    return v
doc = json.load(open(sys.argv[1]))
json.dump(cut(doc, int(sys.argv[3])), open(sys.argv[2], "w"))
EOF
}

# A `node --prof` tick log of a small busy script, cut to the records of
# its own functions, the first few others and the first ticks; and its
# `--prof-process --preprocess` JSON with only the code the ticks name
# (node's own symbols are ~45,000 entries). Made once per invocation (node
# takes a few seconds), in $tmp.
v8_logs() {
    [ -s "$tmp/v8pre.json" ] && return 0
    command -v node >/dev/null 2>&1 || return 1
    (
        cd "$tmp" &&
            printf '%s\n' 'function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }' \
                'let s = 0; for (let i = 0; i < 30; i++) s += fib(22); console.log(s);' >app.js &&
            node --prof app.js >/dev/null &&
            awk '/^tick,/ { if (++t <= 80) print; next }
                 /app\.js|^shared-library|^v8-version|^heap-/ { print; next }
                 ++o <= 300 { print }' isolate-*-v8.log >v8.log &&
            rm -f isolate-*-v8.log &&
            node --prof-process --preprocess v8.log 2>/dev/null >v8pre-all.json &&
            python3 - v8pre-all.json v8pre.json <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
used = sorted({c for t in d["ticks"] for c in t["s"][0::2] if c >= 0})
new = {c: i for i, c in enumerate(used)}
d["code"] = [d["code"][c] for c in used]
for t in d["ticks"]:
    t["s"] = [new.get(x, -1) if i % 2 == 0 else x for i, x in enumerate(t["s"])]
json.dump(d, open(sys.argv[2], "w"))
EOF
    ) && rm -f "$tmp/v8pre-all.json" && [ -s "$tmp/v8pre.json" ]
}

# A Chrome trace holding a real `.cpuprofile` as a Profile event and two
# ProfileChunk events, as `chromium --trace-startup` writes them.
chrome_trace() { # dst
    text "$stacks/node.cpuprofile.gz" | python3 -c '
import json, sys
p = json.load(sys.stdin)
nodes = [{k: v for k, v in n.items() if k != "children"} for n in p["nodes"]]
parent = {c: n["id"] for n in p["nodes"] for c in n.get("children", [])}
for n in nodes:
    if n["id"] in parent:
        n["parent"] = parent[n["id"]]
s, d = p["samples"][:200], p["timeDeltas"][:200]
h, k = len(nodes) // 2, len(s) // 2
ev = [{"pid": 7, "tid": 9, "ph": "M", "name": "thread_name", "args": {"name": "CrRendererMain"}},
      {"pid": 7, "tid": 9, "ph": "P", "name": "Profile", "id": "0x1", "ts": p["startTime"],
       "args": {"data": {"startTime": p["startTime"]}}},
      {"pid": 7, "tid": 9, "ph": "P", "name": "ProfileChunk", "id": "0x1", "ts": p["startTime"],
       "args": {"data": {"cpuProfile": {"nodes": nodes[:h], "samples": s[:k]}, "timeDeltas": d[:k]}}},
      {"pid": 7, "tid": 9, "ph": "P", "name": "ProfileChunk", "id": "0x1", "ts": p["startTime"] + 1,
       "args": {"data": {"cpuProfile": {"nodes": nodes[h:], "samples": s[k:]}, "timeDeltas": d[k:]}}},
      {"pid": 7, "tid": 9, "ph": "X", "name": "RunTask", "ts": p["startTime"], "dur": 5, "args": {}}]
json.dump({"traceEvents": ev}, sys.stdout)' >"$1"
}

# A JDK Flight Recorder file of a small busy Java program (no JFR fixture is
# kept: a recording is hundreds of KB). Made once per invocation, in $tmp.
jfr_file() {
    [ -e "$tmp/s.jfr" ] && return 0
    command -v javac >/dev/null 2>&1 || return 1
    printf '%s\n' 'public class S { public static void main(String[] a) { long s = 0; for (long i = 0; i < 400000000L; i++) s += i ^ (s >>> 3); System.out.println(s); } }' >"$tmp/S.java"
    (cd "$tmp" && javac S.java && java -XX:StartFlightRecording=filename=s.jfr,settings=profile -cp . S) >/dev/null 2>&1
}

cpuprofile_small() { # dst: the real .cpuprofile with its samples cut to 300
    text "$stacks/node.cpuprofile.gz" | python3 -c '
import json, sys
p = json.load(sys.stdin)
p["samples"], p["timeDeltas"] = p["samples"][:300], p["timeDeltas"][:300]
json.dump(p, sys.stdout)' >"$1"
}

# The registry target's first byte picks FORMATS[byte % 13], in registry
# order (crates/stacks/src/format.rs).
registry_index() {
    case $1 in
    pprof) echo 0 ;; jfr) echo 1 ;; speedscope) echo 2 ;; chrometrace) echo 3 ;;
    cpuprofile) echo 4 ;; pstats) echo 5 ;; v8pre) echo 6 ;; v8log) echo 7 ;;
    bpftrace) echo 9 ;; dtrace) echo 10 ;; perf) echo 11 ;; folded) echo 12 ;;
    esac
}

dtrace_text() {
    printf '  busy\n              libc.so.1`_write+0x15\n              busy`main+0x20\n                12\n\n  busy\n              busy`spin+0x8\n              busy`main+0x20\n                30\n'
}

pstats_file() { # dst
    python3 -c 'import cProfile, sys; p = cProfile.Profile(); p.enable(); sorted(map(str, range(99))); p.disable(); p.dump_stats(sys.argv[1])' "$1"
}

seed() { # target
    local dir=corpus/$1 f b i e
    mkdir -p "$dir"
    case $1 in
    perf_script | collapse_perf)
        for f in "$stacks"/*.perf.gz; do
            b=$(basename "$f" .perf.gz)
            perf_pieces "$f" "$dir" "seed-$b" "$([ "$1" = collapse_perf ] && echo 1)"
        done
        ;;
    folded)
        for f in "$stacks"/*.folded.expected*; do
            b=$(basename "$f" | sed 's/\.folded\.expected.*//')
            line_pieces "$f" "$dir" "seed-$b" 30
        done
        ;;
    aggregations)
        cp "$stacks/busy.bpftrace.txt" "$dir/seed-bpftrace"
        dtrace_text >"$dir/seed-dtrace"
        ;;
    cpuprofile) cpuprofile_small "$dir/seed-node" ;;
    # The reader takes the protobuf itself; gzip is undone by the input layer.
    pprof) gzip -dc "$stacks/go.pprof" >"$dir/seed-go" ;;
    speedscope)
        cp "$stacks/py-spy.speedscope.json" "$dir/seed-py-spy"
        trim_json "$runs/profiles/flask-shop-slowcall-config.speedscope.json" "$dir/seed-flask-shop" 200
        ;;
    pstats) pstats_file "$dir/seed-cprofile" ;;
    v8log) v8_logs && cp "$tmp/v8.log" "$dir/seed-fib" ;;
    v8pre) v8_logs && cp "$tmp/v8pre.json" "$dir/seed-fib" ;;
    chrometrace) chrome_trace "$dir/seed-node" ;;
    detect)
        cp "$stacks/go.pprof" "$dir/seed-go.pprof"
        cp "$stacks/c.perf.gz" "$dir/seed-c.perf.gz"
        cpuprofile_small "$dir/seed-node.cpuprofile"
        cp "$stacks/py-spy.speedscope.json" "$dir/seed-py-spy.speedscope.json"
        chrome_trace "$dir/seed-chrome.json"
        pstats_file "$dir/seed-cprofile"
        perf_pieces "$stacks/c-header.perf.gz" "$dir" seed-perf ""
        line_pieces "$stacks/c.folded.expected" "$dir" seed-folded 30
        if v8_logs; then
            cp "$tmp/v8.log" "$dir/seed-v8.log"
            cp "$tmp/v8pre.json" "$dir/seed-v8pre.json"
        fi
        ;;
    registry)
        # Each format's real input, read as itself and as the next format
        # (a forced --format that does not fit).
        local fmt src
        for fmt in pprof speedscope chrometrace cpuprofile pstats v8pre v8log bpftrace dtrace perf folded jfr; do
            src=$tmp/registry-$fmt
            case $fmt in
            pprof) cp "$stacks/go.pprof" "$src" ;;
            speedscope) cp "$stacks/py-spy.speedscope.json" "$src" ;;
            chrometrace) chrome_trace "$src" ;;
            cpuprofile) cpuprofile_small "$src" ;;
            pstats) pstats_file "$src" ;;
            v8pre) v8_logs && cp "$tmp/v8pre.json" "$src" || continue ;;
            v8log) v8_logs && cp "$tmp/v8.log" "$src" || continue ;;
            bpftrace) cp "$stacks/busy.bpftrace.txt" "$src" ;;
            dtrace) dtrace_text >"$src" ;;
            perf) text "$stacks/c.perf.gz" | head -c 3000 >"$src" ;;
            folded) head -n 30 "$stacks/c.folded.expected" >"$src" ;;
            jfr) jfr_file && cp "$tmp/s.jfr" "$src" || continue ;;
            esac
            i=$(registry_index "$fmt")
            { printf "\\$(printf %o "$i")"; cat "$src"; } >"$dir/seed-$fmt"
            { printf "\\$(printf %o $(((i + 1) % 13)))"; cat "$src"; } >"$dir/seed-$fmt-other"
            rm -f "$src"
        done
        ;;
    jfr)
        # The target's first byte picks the event (0: CPU samples, 1:
        # allocation samples).
        if jfr_file; then
            { printf '\0'; cat "$tmp/s.jfr"; } >"$dir/seed-jdk"
            { printf '\1'; cat "$tmp/s.jfr"; } >"$dir/seed-jdk-alloc"
        fi
        ;;
    logs_ltsv) line_pieces "$logs/mixed.ltsv" "$dir" seed 15 ;;
    logs_json) line_pieces "$logs/mixed.json" "$dir" seed 15 ;;
    logs_regexp) line_pieces "$logs/mixed.combined" "$dir" seed 15 ;;
    logs_filter)
        i=0
        while IFS= read -r e; do
            { printf '%s\n' "$e"; head -n 12 "$logs/mixed.ltsv"; } >"$dir/seed-$i"
            i=$((i + 1))
        done <<'EOF'
Status >= 400
Method == 'GET' and ResponseTime > 0.1
Status >= 500 or (Uri matches "^/api/" and ResponseTime > 0.5)
not (Status in [200, 304]) or BodyBytes > 10000
Uri contains "users" && !(Method in ["POST", "PUT"])
Uri startsWith "/api" || Uri endsWith ".png"
Time >= TimeAgo("5m")
BetweenTime(Time, "2026-11-21T10:00:00Z", "2026-11-21T10:05:00Z")
status not in [200] and response_time <= 1.5e-1
EOF
        ;;
    logs_dump)
        cat >"$dir/seed-dump" <<'EOF'
{"format":"keisoku-logs-dump/1","counts":{"lines":3,"blank":0,"parsed":3,"filtered":0,"malformed":0,"bad_time":0},"routes":[{"method":"GET","uri":"/api/users/1","count":1,"status":[0,1,0,0,0],"time":{"n":1,"min":6.999,"saw_zero":false,"max":6.999,"sum":6.999},"body":{"n":1,"min":1024.0,"saw_zero":false,"max":1024.0,"sum":1024.0},"moments":{"n":1,"mean":6.999,"m2":0.0},"low":6.999,"ms_grid":true,"hist_us":[[7000063,1]]},{"method":"GET","uri":"/","count":2,"status":[0,2,0,0,0],"time":{"n":2,"min":0.009,"saw_zero":false,"max":1.25,"sum":1.259},"body":{"n":2,"min":4096.0,"saw_zero":true,"max":4096.0,"sum":4096.0},"moments":{"n":2,"mean":0.6295000000000001,"m2":0.7700405},"low":0.009,"ms_grid":true,"hist_us":[[9007,1],[1250303,1]]}]}
EOF
        ;;
    logs_pcap)
        # A minimal capture as tcpdump writes one: Ethernet, IPv4, a
        # handshake, one request and its response on port 80.
        python3 - "$dir/seed-pcap" <<'PY'
import struct, sys
def seg(sport, dport, seq, flags, payload):
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq, 0, 5 << 4, flags, 0, 0, 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, bytes([127, 0, 0, 1]), bytes([127, 0, 0, 1])) + tcp
    return b"\0" * 12 + b"\x08\x00" + ip
req = b"GET /users/1?a=1 HTTP/1.1\r\nHost: t\r\n\r\n"
res = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
frames = [seg(5000, 80, 1, 2, b""), seg(80, 5000, 1, 0x12, b""), seg(5000, 80, 2, 0x10, req), seg(80, 5000, 2, 0x10, res)]
out = struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1)
for i, f in enumerate(frames):
    out += struct.pack("<IIII", 1700000000, i * 1000, len(f), len(f)) + f
open(sys.argv[1], "wb").write(out)
PY
        # The first byte also picks the port: 0xd4 is even, so port 80.
        ;;
    input_limits)
        # First byte: the line limit (mod 64); the next 8: read sizes.
        i=0
        for f in "$logs/mixed.ltsv" "$logs/mixed.combined"; do
            { printf '\077\003\011\001\100\007\002\005\020'; head -c 600 "$f"; } >"$dir/seed-$i"
            { printf '\377\001\001\001\001\001\001\001\001'; head -c 200 "$f"; } >"$dir/seed-$i-long"
            i=$((i + 1))
        done
        ;;
    names)
        head -n 40 "$stacks/java.folded.expected" | tr ';' '\n' | sed 's/ [0-9]*$//' | sort -u | head -n 60 |
            split -l 1 - "$dir/seed-frame-"
        printf 'run \033[31mred\033[0m\x07 \xe2\x80\xae tag' >"$dir/seed-escapes"
        printf 'LambdaForm$MH/0x00007f3c1c0a1234.invoke' >"$dir/seed-lambda"
        printf '[unknown] (/tmp/perf-4242.map) 0x7f3c1c0a1234' >"$dir/seed-perfmap"
        ;;
    serve_request)
        printf 'GET / HTTP/1.1\r\nHost: 127.0.0.1:7070\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n' >"$dir/seed-get"
        printf 'GET /api/runs/last?token=abc HTTP/1.1\r\nHost: localhost:7070\r\nConnection: keep-alive\r\n\r\n' >"$dir/seed-api"
        printf 'POST /api/runs/x/tags HTTP/1.1\r\nHost: 127.0.0.1:7070\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n{"tags":["slow"]}' >"$dir/seed-post"
        printf 'DELETE /api/runs/x HTTP/1.0\r\nHost: [::1]:7070\r\nContent-Length: 0\r\n\r\n' >"$dir/seed-delete"
        ;;
    run_json | compare)
        # compare reads two runs: the target splits its input at the first
        # NUL byte.
        for f in "$runs"/*.json; do
            b=$(basename "$f" .json)
            trim_json "$f" "$tmp/$b.json" 4
        done
        if [ "$1" = run_json ]; then
            for f in "$tmp"/*.json; do mv "$f" "$dir/seed-$(basename "$f" .json)"; done
        else
            { cat "$tmp/java-bidder-naive-rollover.json"; printf '\0'; cat "$tmp/java-bidder-tuned-none.json"; } >"$dir/seed-java"
            { cat "$tmp/perl-dsp-naive-oversubscribed.json"; printf '\0'; cat "$tmp/perl-dsp-tuned-none.json"; } >"$dir/seed-perl"
            { cat "$tmp/node-bff-naive-di.json"; printf '\0'; cat "$tmp/flask-shop-naive-config.json"; } >"$dir/seed-mixed"
            rm -f "$tmp"/*.json
        fi
        ;;
    load_http)
        # First byte: bit 0 a HEAD request, the rest how the bytes arrive.
        printf '\0HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello' >"$dir/seed-length"
        printf '\6HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\nTrailer: a\r\n\r\n' >"$dir/seed-chunked"
        printf '\2HTTP/1.0 200 OK\r\nServer: nginx/1.26.3\r\n\r\nuntil the connection closes' >"$dir/seed-close"
        printf '\1HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\n\r\n' >"$dir/seed-head"
        printf '\3HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\nETag: "x"\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 500 Internal Server Error\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno' >"$dir/seed-pipelined"
        ;;
    load_targets)
        printf 'GET http://127.0.0.1:8080/\n' >"$dir/seed-one"
        printf '# weights\n3 GET http://127.0.0.1:8080/api/items?id=1\n1 POST http://127.0.0.1:8080/api/orders @body\n\n2 PUT http://[::1]:8080/a/b @body\nDELETE http://localhost:8080/x\n' >"$dir/seed-mixed"
        ;;
    load_scenario)
        cp "$root/examples/scenario-app/login.yaml" "$dir/seed-login"
        printf 'steps:\n  - name: a\n    url: /x\n    think: 1ms..2ms\n    checks: {status: [200, 201], body_contains: ok, json: [{path: "$.a[0]", equals: 1}]}\n    extract: [{var: v, regex: "id=(\\\\d+)"}]\n  - name: b\n    url: /y/{{var.v}}\n' >"$dir/seed-steps"
        ;;
    grammars)
        # First byte picks the grammar (see fuzz_targets/grammars.rs).
        i=0
        while IFS= read -r e; do
            printf "\\$(printf %o $((i % 9)))%s" "$e" >"$dir/seed-$i"
            i=$((i + 1))
        done <<'EOF'
1.5s
64MiB
p99<=1s,p80<=500ms,rps>=4000
p99>+10%,rps<-5%,errors>0
p99<=250ms,rps>=1000
1..64:8
http://127.0.0.1:8080/api/items?id=1
Authorization: Bearer abc
1700000000123
2m30s
1.5GB
p50<=1.5s
EOF
        ;;
    store_codec)
        # First 4 bytes: how many items the blob is said to hold.
        printf '\3\0\0\0\240\37\240\37\240\37' >"$dir/seed-times"
        printf '\2\0\0\0\0\0\0\0\0\0\360\77\0\0\0\0\0\0\0\100' >"$dir/seed-values"
        printf '\4\0\0\0\1\2\203\1\377\377\3' >"$dir/seed-indexes"
        ;;
    esac
}

mkdir -p artifacts/logs
failed=()
summary=()
for t in "${targets[@]}"; do
    # A seed that cannot be made (no node, no JDK) leaves the others.
    seed "$t" || echo "fuzz: $t: some seeds could not be made" >&2
    echo "fuzz: $t for ${secs}s ($(find "corpus/$t" -type f | wc -l) inputs in corpus)" >&2
    log=artifacts/logs/$t.log
    mkdir -p "artifacts/$t"
    before=$(find "artifacts/$t" -type f | wc -l)
    # Its own process group, so an interrupt stops the fuzzer as well.
    set -m
    TMPDIR=$tmp cargo +nightly fuzz run -s "$sanitizer" "$t" "corpus/$t" -- \
        -max_total_time="$secs" -rss_limit_mb="$rss" -timeout="$hang" \
        -print_final_stats=1 >"$log" 2>&1 &
    child=$!
    set +m
    code=0
    wait "$child" || code=$?
    child=
    found=$(($(find "artifacts/$t" -type f | wc -l) - before))
    status=ok
    if [ "$code" -ne 0 ] || [ "$found" -gt 0 ]; then
        status="CRASH (exit $code)"
        failed+=("$t")
    fi
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    summary+=("$(printf '%-14s %5ss %11s runs %7s runs/s %3s crashes  %s' \
        "$t" "$secs" "${n:-?}" "${rate:-?}" "$found" "$status")")
    [ "$status" = ok ] || tail -n 30 "$log" >&2
done

printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: crashes in ${failed[*]}; inputs under fuzz/artifacts/<target>/, logs under fuzz/artifacts/logs/" >&2
    exit 1
fi
