#!/bin/sh
# Installs nginx from Debian when missing (and perl-dsp's Starman); quiet when installed.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
if ! command -v nginx > /dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q nginx-light > /dev/null
fi
"$HERE/../perl-dsp/install.sh"
