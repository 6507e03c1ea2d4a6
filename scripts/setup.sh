#!/usr/bin/env bash
# Installs everything keisoku's build and test suite need, idempotently:
# Debian packages (nginx, wrk, perf, chromium) and web/node_modules.
# Safe to run again and again; it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || need_apt+=(nginx-light)
command -v wrk >/dev/null 2>&1 || need_apt+=(wrk)
command -v perf >/dev/null 2>&1 || need_apt+=(linux-perf)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v sqlite3 >/dev/null 2>&1 || need_apt+=(sqlite3)
command -v gzip >/dev/null 2>&1 || need_apt+=(gzip)
# Go builds alp v1.0.21 (bench/alp/build.sh), the peer `keisoku logs` is tested against.
command -v go >/dev/null 2>&1 || [[ -x /usr/local/go/bin/go ]] || need_apt+=(golang-go)
command -v jcmd >/dev/null 2>&1 || need_apt+=(openjdk-17-jdk-headless)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3 python3-pip)

if ((${#need_apt[@]})); then
  echo "setup: installing Debian packages: ${need_apt[*]}" >&2
  SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  # Packages like nginx try to start a service on install; there is no init here and we start our own.
  # A postinst that fails once (a service that cannot start, a concurrent dpkg) is retried after
  # letting dpkg finish configuring; the second failure is real and stops the script.
  if ! $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/tmp/keisoku-apt.log 2>&1; then
    $SUDO dpkg --configure -a >/dev/null 2>&1 || true
    $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/tmp/keisoku-apt.log 2>&1 ||
      { tail -20 /tmp/keisoku-apt.log >&2; echo "setup: apt-get install failed" >&2; exit 1; }
  fi
fi

# py-spy (the Python profiler keisoku drives) comes from PyPI.
if ! command -v py-spy >/dev/null 2>&1; then
  echo "setup: installing py-spy (pip)" >&2
  python3 -m pip install -q py-spy 2>/dev/null || python3 -m pip install -q --break-system-packages py-spy
fi

for tool in cargo node npm; do
  command -v "$tool" >/dev/null 2>&1 || { echo "setup: $tool is required but not installed" >&2; exit 1; }
done
rustup component list --installed 2>/dev/null | grep -q clippy || rustup component add clippy rustfmt

if [[ ! -d web/node_modules/esbuild || web/package-lock.json -nt web/node_modules/.package-lock.json ]]; then
  echo "setup: installing web/ dependencies (npm ci)" >&2
  (cd web && npm ci --no-audit --no-fund --loglevel=error)
fi

# ---- corpus of real services (examples/, issue 14) -------------------------------------------
# Each service's install.sh is idempotent and quiet when its dependencies are present: logback
# (Maven Central, through mvn), Express (npm), Flask and gunicorn (PyPI), Starman and nginx (Debian).
command -v mvn >/dev/null 2>&1 || { SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends maven >/tmp/keisoku-apt.log 2>&1 ||
    { tail -20 /tmp/keisoku-apt.log >&2; echo "setup: apt-get install maven failed" >&2; exit 1; }; }
for svc in java-bidder node-bff flask-shop perl-dsp nginx-proxy; do
  examples/$svc/install.sh || { echo "setup: examples/$svc/install.sh failed" >&2; exit 1; }
done

# ---- speedscope's file-format schema (issue 16) ---------------------------------------------
# `flame -o x.speedscope.json` is validated against the schema in speedscope's npm package, with
# ajv, by crates/keisoku/tests/profiles_js.rs; both live outside the repo, in the user's cache.
SPEEDSCOPE_TOOLS="$HOME/.cache/keisoku-tools/speedscope"
if [[ ! -f "$SPEEDSCOPE_TOOLS/node_modules/speedscope/dist/release/file-format-schema.json" ||
      ! -d "$SPEEDSCOPE_TOOLS/node_modules/ajv" ]]; then
  echo "setup: installing speedscope's schema and ajv (npm) into $SPEEDSCOPE_TOOLS" >&2
  mkdir -p "$SPEEDSCOPE_TOOLS"
  (cd "$SPEEDSCOPE_TOOLS" && npm install --no-audit --no-fund --loglevel=error speedscope@1.25.0 ajv@8.20.0 >/dev/null)
fi

# ---- profile inputs (issue 16, perfin) --------------------------------------------------------
# tests/profiles_perf.rs records real profiles with bpftrace (Debian) besides perf, gcc and go.
command -v bpftrace >/dev/null 2>&1 || { SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends bpftrace >/tmp/keisoku-apt.log 2>&1 ||
    { tail -20 /tmp/keisoku-apt.log >&2; echo "setup: apt-get install bpftrace failed" >&2; exit 1; }; }

# ---- async-profiler (JFR input tests, issue 16) ------------------------------------------------
# tests/profiles_jfr.rs records with async-profiler's `-o jfr`; its Maven Central jar carries the
# native library (extracted at test time with the JDK's `jar`). mvn is installed above.
ap_jar="$HOME/.m2/repository/tools/profiler/async-profiler/4.2/async-profiler-4.2.jar"
if [[ ! -f $ap_jar ]]; then
  echo "setup: fetching async-profiler 4.2 (mvn, Maven Central)" >&2
  mvn -q dependency:get -Dartifact=tools.profiler:async-profiler:4.2 >/tmp/keisoku-mvn-ap.log 2>&1 ||
    { tail -20 /tmp/keisoku-mvn-ap.log >&2; echo "setup: fetching async-profiler failed" >&2; exit 1; }
fi

# ---- cProfile input (issue 16): Flask and werkzeug's ProfilerMiddleware from PyPI -------------
# crates/keisoku/tests/profiles_pstats.rs records per-request .prof files with them at test time.
if ! python3 -c 'import flask, werkzeug.middleware.profiler' 2>/dev/null; then
  echo "setup: installing Flask (pip) for the cProfile tests" >&2
  python3 -m pip install -q 'flask>=3,<4' 2>/dev/null ||
    python3 -m pip install -q --break-system-packages 'flask>=3,<4'
fi

# ---- access-log formats (issue 17, logfmt) -----------------------------------------------------
# tests/logs_formats*.rs have Apache httpd and Caddy (Debian) write their own access logs, on
# 127.0.0.1 only; the packages' services are not started (there is no init, and tests run their own).
{ command -v apache2 >/dev/null 2>&1 || [[ -x /usr/sbin/apache2 ]]; } &&
  { command -v caddy >/dev/null 2>&1 || [[ -x /usr/bin/caddy ]]; } || { SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends apache2 caddy >/tmp/keisoku-apt.log 2>&1 ||
    { $SUDO dpkg --configure -a >/dev/null 2>&1 || true
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends apache2 caddy >/tmp/keisoku-apt.log 2>&1; } ||
    { tail -20 /tmp/keisoku-apt.log >&2; echo "setup: apt-get install apache2 caddy failed" >&2; exit 1; }; }

# ---- transports (issue 18, tls18) -------------------------------------------------------------
# crates/keisoku/tests/bench_tls.rs makes its CA, server and client certificates with the openssl
# CLI at test time (nginx-light above has the ssl module); bench/loadgen-tls.sh needs it too.
command -v openssl >/dev/null 2>&1 || { SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends openssl >/tmp/keisoku-apt.log 2>&1 ||
    { tail -20 /tmp/keisoku-apt.log >&2; echo "setup: apt-get install openssl failed" >&2; exit 1; }; }

# ---- other tools' client results (issue 18, import18) -----------------------------------------
# crates/keisoku/tests/record_import.rs runs the real tools and imports what they write.
# Debian's jmeter 2.13 cannot load a plan with Debian's newer xstream (ForbiddenClassException), so
# JMeter 5.6.3 is assembled from its Maven Central jars (pom beside the test) into
# $KEISOKU_TOOLS/jmeter-5.6.3 (bin/ApacheJMeter.jar); k6 and vegeta come from the Go module proxy.
tools_dir=${KEISOKU_TOOLS:-$HOME/.cache/keisoku-tools}
jm_home=$tools_dir/jmeter-5.6.3
if [[ ! -f $jm_home/bin/ApacheJMeter.jar ]]; then
  echo "setup: assembling JMeter 5.6.3 from Maven Central into $jm_home" >&2
  jm_tmp=$(mktemp -d)
  cp crates/keisoku/tests/record_import/jmeter-pom.xml "$jm_tmp/pom.xml"
  (cd "$jm_tmp" && mvn -q -B dependency:copy-dependencies -DoutputDirectory=lib >/tmp/keisoku-mvn-jmeter.log 2>&1) ||
    { tail -20 /tmp/keisoku-mvn-jmeter.log >&2; echo "setup: fetching JMeter failed" >&2; exit 1; }
  mkdir -p "$jm_home/lib/ext" "$jm_home/bin"
  (cd "$jm_home" && unzip -q -o "$jm_tmp"/lib/ApacheJMeter_config-5.6.3.jar 'bin/*' -x 'bin/templates/*')
  for j in "$jm_tmp"/lib/*.jar; do
    case $(basename "$j") in
      ApacheJMeter-5.6.3.jar) cp "$j" "$jm_home/bin/ApacheJMeter.jar" ;;
      ApacheJMeter_config-*) ;;
      ApacheJMeter_*) cp "$j" "$jm_home/lib/ext/" ;;
      *) cp "$j" "$jm_home/lib/" ;;
    esac
  done
  rm -rf "$jm_tmp"
fi
gobin=$( (command -v go >/dev/null 2>&1 && go env GOPATH) || /usr/local/go/bin/go env GOPATH)/bin
[[ -x $gobin/k6 ]] || { echo "setup: building k6 v1.8.1 (go install)" >&2
  PATH=$PATH:/usr/local/go/bin go install go.k6.io/k6@v1.8.1 >/tmp/keisoku-go-k6.log 2>&1 ||
    { tail -20 /tmp/keisoku-go-k6.log >&2; echo "setup: go install k6 failed" >&2; exit 1; }; }
[[ -x $gobin/vegeta ]] || { echo "setup: building vegeta v12.13.0 (go install)" >&2
  PATH=$PATH:/usr/local/go/bin go install github.com/tsenart/vegeta/v12@v12.13.0 >/tmp/keisoku-go-vegeta.log 2>&1 ||
    { tail -20 /tmp/keisoku-go-vegeta.log >&2; echo "setup: go install vegeta failed" >&2; exit 1; }; }
# ---- HTTP/2 and gRPC (issue 18, h2grpc) -------------------------------------------------------
# crates/keisoku/tests/bench_h2.rs loads nginx over HTTP/2 (nginx-light above has the http_v2
# module) and a Python grpcio server (generic handler: no protoc needed); bench/loadgen-h2.sh
# compares CPU per request with h2load from nghttp2-client. Debian's python3-grpcio is for
# /usr/bin/python3 (a pyenv python3 earlier on PATH does not see it), so the test runs that one.
{ command -v h2load >/dev/null 2>&1 && /usr/bin/python3 -c 'import grpc' >/dev/null 2>&1; } || { SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nghttp2-client python3-grpcio >/tmp/keisoku-apt.log 2>&1 ||
    { $SUDO dpkg --configure -a >/dev/null 2>&1 || true
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nghttp2-client python3-grpcio >/tmp/keisoku-apt.log 2>&1; } ||
    { tail -20 /tmp/keisoku-apt.log >&2; echo "setup: apt-get install nghttp2-client python3-grpcio failed" >&2; exit 1; }; }

# ---- packet captures (issue 17, pcap17) -------------------------------------------------------
# tests/logs_pcap.rs records loopback traffic with tcpdump (as root: capturing needs CAP_NET_RAW)
# and compares `keisoku logs pcap` with alp's `pcap` on it.
{ command -v tcpdump >/dev/null 2>&1 || [[ -x /usr/bin/tcpdump ]] || [[ -x /usr/sbin/tcpdump ]]; } || { SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends tcpdump >/tmp/keisoku-apt.log 2>&1 ||
    { tail -20 /tmp/keisoku-apt.log >&2; echo "setup: apt-get install tcpdump failed" >&2; exit 1; }; }

# ---- HTTP/2 faults and brotli (issue 18, h2x18) -----------------------------------------------
# bench_h2.rs resets and refuses streams from a small h2c server on Python `h2`; bench_brotli.rs
# serves brotli bodies with Python `brotli`. Both are Debian packages for /usr/bin/python3.
/usr/bin/python3 -c 'import h2, brotli' >/dev/null 2>&1 || { SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-h2 python3-brotli >/tmp/keisoku-apt.log 2>&1 ||
    { tail -20 /tmp/keisoku-apt.log >&2; echo "setup: apt-get install python3-h2 python3-brotli failed" >&2; exit 1; }; }
