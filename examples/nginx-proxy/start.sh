#!/bin/sh
# Starts nginx at 127.0.0.1:PORT proxying to perl-dsp (tuned) at PORT+1, both in one process tree.
#   MODE=naive|tuned  CAUSES=noupstreamkeepalive (naive only)  ACCESS_LOG=FILE (nginx, LTSV)
# naive with noupstreamkeepalive: nginx's default upstream HTTP/1.0, a new connection to the
# upstream per request; otherwise a keep-alive pool of 16 upstream connections.
# Prints "nginx-proxy listening on PORT" once nginx accepts connections.
set -eu
PORT=${1:?usage: start.sh PORT}
HERE=$(cd "$(dirname "$0")" && pwd)
"$HERE/install.sh"
MODE=${MODE:-naive}
CAUSES=${CAUSES:-}
case "$MODE" in naive|tuned) ;; *) echo "nginx-proxy: MODE must be naive or tuned, not $MODE" >&2; exit 2 ;; esac
for c in $(echo "$CAUSES" | tr ',' ' '); do
  case "$c" in noupstreamkeepalive) ;; *) echo "nginx-proxy: unknown cause $c (known: noupstreamkeepalive)" >&2; exit 2 ;; esac
done
UPSTREAM_PORT=$((PORT + 1))
PREFIX=/tmp/keisoku-corpus/nginx-proxy-$PORT
ACCESS_LOG=${ACCESS_LOG:-$PREFIX/access.log}
mkdir -p "$PREFIX" "$(dirname "$ACCESS_LOG")"
UP_KA='keepalive 16;'
PX_KA='proxy_http_version 1.1; proxy_set_header Connection "";'
if [ "$MODE" = naive ]; then
  case ",$CAUSES," in *,noupstreamkeepalive,*) UP_KA='' PX_KA='' ;; esac
fi
sed -e "s|@PORT@|$PORT|g; s|@UPSTREAM_PORT@|$UPSTREAM_PORT|g; s|@PREFIX@|$PREFIX|g" \
    -e "s|@ACCESS_LOG@|$ACCESS_LOG|g; s|@UPSTREAM_KEEPALIVE@|$UP_KA|; s|@PROXY_KEEPALIVE@|$PX_KA|" \
    "$HERE/nginx.conf.in" > "$PREFIX/nginx.conf"
# The upstream runs in nginx's process tree: keisoku watches the service as a whole (proxy and
# application on one host), so the proxy's wait on the upstream is the upstream's CPU.
MODE=tuned CAUSES= ACCESS_LOG=/dev/null "$HERE/../perl-dsp/start.sh" "$UPSTREAM_PORT" > "$PREFIX/upstream.log" 2>&1 &
# Wait (up to 60 s) until the upstream accepts, so nginx's first answers are not 502s.
perl -MIO::Socket::INET -e '
  for (1 .. 600) { exit 0 if IO::Socket::INET->new(PeerAddr => "127.0.0.1:$ARGV[0]", Timeout => 1); select(undef, undef, undef, 0.1) }
  die "nginx-proxy: upstream perl-dsp did not listen on $ARGV[0]\n"' "$UPSTREAM_PORT"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
echo "nginx-proxy listening on $PORT (upstream ready; nginx starting)"
exec "$NGINX" -p "$PREFIX" -c "$PREFIX/nginx.conf" -e "$PREFIX/error.log"
