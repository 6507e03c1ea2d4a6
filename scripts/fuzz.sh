#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for SECONDS each (default 60), one
# after the other (the machine's other cores stay free), seeding each corpus
# from the parsers' real test data. Not part of CI: it is slow by design.
#
#   scripts/fuzz.sh            # 60 s per target
#   scripts/fuzz.sh 300        # 5 min per target
#   scripts/fuzz.sh 30 pprof   # only the named targets
#
# Environment: FUZZ_SANITIZER (address|none, default address), FUZZ_RSS_MB
# (default 2048), FUZZ_TIMEOUT (seconds per input before it counts as a
# hang, default 10).
#
# Corpora go to fuzz/corpus/<target>/, crashes to fuzz/artifacts/<target>/,
# libFuzzer's output to fuzz/artifacts/logs/<target>.log (all git-ignored).
# Exit status: 0 when no target crashed, 1 otherwise (the artifacts are
# listed), 2 on bad usage.
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
sanitizer=${FUZZ_SANITIZER:-address}
rss=${FUZZ_RSS_MB:-2048}
hang=${FUZZ_TIMEOUT:-10}

if ! rustup toolchain list | grep -q '^nightly'; then
    echo "fuzz: installing the nightly toolchain (libFuzzer needs it)" >&2
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz" >&2
    cargo install cargo-fuzz
fi

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

seed() { # target
    local dir=corpus/$1 f b
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
        printf '  busy\n              libc.so.1`_write+0x15\n              busy`main+0x20\n                12\n' >"$dir/seed-dtrace"
        ;;
    cpuprofile) text "$stacks/node.cpuprofile.gz" >"$dir/seed-node" ;;
    pprof) cp "$stacks/go.pprof" "$dir/seed-go" ;;
    speedscope) cp "$stacks/py-spy.speedscope.json" "$dir/seed-py-spy" ;;
    pstats) python3 -c 'import cProfile, sys; p = cProfile.Profile(); p.enable(); sorted(map(str, range(99))); p.disable(); p.dump_stats(sys.argv[1])' "$dir/seed-cprofile" ;;
    detect)
        cp "$stacks/go.pprof" "$dir/seed-go.pprof"
        cp "$stacks/c.perf.gz" "$dir/seed-c.perf.gz"
        text "$stacks/node.cpuprofile.gz" >"$dir/seed-node.cpuprofile"
        cp "$stacks/py-spy.speedscope.json" "$dir/seed-py-spy.speedscope.json"
        perf_pieces "$stacks/c-header.perf.gz" "$dir" seed-perf ""
        line_pieces "$stacks/c.folded.expected" "$dir" seed-folded 30
        ;;
    jfr)
        # No JFR fixture is kept (a recording is hundreds of KB): record a
        # small one now. The target's first byte picks the event (0: CPU).
        if command -v javac >/dev/null 2>&1; then
            local t
            t=$(mktemp -d)
            printf '%s\n' 'public class S { public static void main(String[] a) { long s = 0; for (long i = 0; i < 400000000L; i++) s += i ^ (s >>> 3); System.out.println(s); } }' >"$t/S.java"
            if (cd "$t" && javac S.java && java -XX:StartFlightRecording=filename=s.jfr,settings=profile -cp . S) >/dev/null 2>&1; then
                { printf '\0'; cat "$t/s.jfr"; } >"$dir/seed-jdk"
            fi
            rm -rf "$t"
        fi
        ;;
    logs_ltsv) line_pieces "$logs/mixed.ltsv" "$dir" seed 15 ;;
    logs_json) line_pieces "$logs/mixed.json" "$dir" seed 15 ;;
    logs_regexp) line_pieces "$logs/mixed.combined" "$dir" seed 15 ;;
    logs_filter)
        local i=0 e
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
    esac
}

mkdir -p artifacts/logs
failed=()
summary=()
for t in "${targets[@]}"; do
    seed "$t"
    echo "fuzz: $t for ${secs}s ($(find "corpus/$t" -type f | wc -l) inputs in corpus)" >&2
    log=artifacts/logs/$t.log
    status=ok
    if ! cargo +nightly fuzz run -s "$sanitizer" "$t" "corpus/$t" -- \
        -max_total_time="$secs" -rss_limit_mb="$rss" -timeout="$hang" \
        -print_final_stats=1 >"$log" 2>&1; then
        status=CRASH
        failed+=("$t")
    fi
    runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n 1)
    summary+=("$(printf '%-14s %6ss %12s execs  %s' "$t" "$secs" "${runs:-?}" "$status")")
    [ $status = ok ] || tail -n 30 "$log" >&2
done

printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: crashes in ${failed[*]}; inputs under fuzz/artifacts/<target>/, logs under fuzz/artifacts/logs/" >&2
    exit 1
fi
