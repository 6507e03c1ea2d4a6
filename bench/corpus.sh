#!/bin/sh
# The corpus matrix of issue 14: every service of examples/ naive with each planted cause
# alone, with all its causes stacked, and tuned; each on a quiet host and beside a
# CPU-hungry neighbour (a busy loop in another process). For each case it prints what
# keisoku found and whether that meets the bar (alone: the cause named in the top 3;
# stacked: every cause named at any rank; tuned: no finding of warning or worse).
#
# usage: bench/corpus.sh [SERVICE...]     (default: every service in examples/expectations.tsv)
# Environment: KEISOKU (default target/debug/keisoku, built if missing), NEIGHBOUR=0 to skip
# the shared-host half, OUT (default bench/out/corpus-<UTC time>.md), PORT_BASE (default 19200:
# the services listen on PORT_BASE..PORT_BASE+53), CORPUS_DIR (kept runs, see run-case.sh).
# Each row also says the 1-minute load average when the case started and ended: the host
# is shared, and what a neighbour costs is part of the result.
# ~20 s a case; the whole matrix (5 services, 2 hosts) takes ~20 minutes on 2 cores.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
EX=$ROOT/examples
if [ -z "${KEISOKU:-}" ]; then
  KEISOKU=${CARGO_TARGET_DIR:-$ROOT/target}/debug/keisoku
  [ -x "$KEISOKU" ] || (cd "$ROOT" && cargo build -q -p keisoku)
fi
export KEISOKU
mkdir -p "$ROOT/bench/out"
OUT=${OUT:-$ROOT/bench/out/corpus-$(date -u +%Y%m%dT%H%M%SZ).md}
SERVICES=${*:-$(grep -v '^#' "$EX/expectations.tsv" | cut -f1 | uniq)}

# Each service gets 10 ports from PORT_BASE (it uses PORT..PORT+3 for its helpers).
PORT_BASE=${PORT_BASE:-19200}
port_of() {
  case "$1" in
    flask-shop) echo $((PORT_BASE)) ;; java-bidder) echo $((PORT_BASE + 10)) ;;
    node-bff) echo $((PORT_BASE + 20)) ;; perl-dsp) echo $((PORT_BASE + 30)) ;;
    nginx-proxy) echo $((PORT_BASE + 40)) ;; *) echo $((PORT_BASE + 50)) ;;
  esac
}

# verdict SERVICE MODE CAUSES FINDINGS-FILE: prints "cause: rank" pairs and ok/FAIL.
verdict() {
  awk -F'\t' -v svc="$1" -v mode="$2" -v causes="$3" '
    FNR == NR { if ($0 !~ /^#/ && $1 == svc) { pre[$2] = $3; sub_[$2] = $4 } next }
    { id[FNR] = $2; sev[FNR] = $3; title[FNR] = $4; n = FNR }
    END {
      ok = 1; out = ""
      if (mode == "tuned") {
        bad = ""
        for (i = 1; i <= n; i++) if (sev[i] != "info") bad = bad " " id[i] "(" sev[i] ")"
        if (bad != "") { ok = 0; out = "problems:" bad } else out = "no problem findings"
      } else {
        k = split(causes, cs, ",")
        for (j = 1; j <= k; j++) {
          c = cs[j]; rank = 0
          for (i = 1; i <= n && !rank; i++)
            if (index(id[i], pre[c]) == 1 && (sub_[c] == "" || index(title[i], sub_[c]) > 0)) rank = i
          out = out (out == "" ? "" : ", ") c " -> " (rank ? "#" rank " " id[rank] : "not named")
          if (!rank || (k == 1 && rank > 3)) ok = 0
        }
      }
      printf "%s\t%s\n", (ok ? "ok" : "FAIL"), out
    }' "$EX/expectations.tsv" "$4"
}

{
  echo "# keisoku corpus run $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), kernel $(uname -r);"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); keisoku $(git -C "$ROOT" rev-parse --short HEAD)."
  echo
  echo "| service | mode | causes | host | load avg (start-end) | verdict | cause -> finding (rank) | all findings (rank id severity) |"
  echo "|---|---|---|---|---|---|---|---|"
} | tee "$OUT"

for svc in $SERVICES; do
  causes=$(grep -v '^#' "$EX/expectations.tsv" | awk -F'\t' -v s="$svc" '$1 == s { print $2 }')
  port=$(port_of "$svc")
  stacked=$(echo "$causes" | paste -sd, -)
  cases=$(for c in $causes; do echo "naive $c"; done; [ "$(echo "$causes" | wc -l)" -gt 1 ] && echo "naive $stacked"; echo "tuned -")
  for host in quiet neighbour; do
    [ "$host" = neighbour ] && [ "${NEIGHBOUR:-1}" = 0 ] && continue
    echo "$cases" | while read -r mode cs; do
      [ "$cs" = - ] && cs=
      f=$(mktemp)
      load0=$(cut -d' ' -f1 /proc/loadavg)
      # One case per host: the corpus tests take the same lock (tests/corpus.rs).
      if flock "${TMPDIR:-/tmp}/keisoku-corpus.lock" "$EX/run-case.sh" "$svc" "$mode" "$cs" "$port" $([ "$host" = neighbour ] && echo neighbour) > "$f" 2> "$f.err"; then
        v=$(verdict "$svc" "$mode" "$cs" "$f")
      else
        v="FAIL	keisoku run failed: $(tail -1 "$f.err")"
      fi
      load1=$(cut -d' ' -f1 /proc/loadavg)
      all=$(awk -F'\t' '{ printf "%s%s %s %s", (NR > 1 ? "; " : ""), $1, $2, $3 }' "$f")
      printf '| %s | %s | %s | %s | %s-%s | %s | %s | %s |\n' "$svc" "$mode" "${cs:--}" "$host" "$load0" "$load1" \
        "$(echo "$v" | cut -f1)" "$(echo "$v" | cut -f2)" "$all" | tee -a "$OUT"
      rm -f "$f" "$f.err"
    done
  done
done
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT"
echo "table written to $OUT" >&2
