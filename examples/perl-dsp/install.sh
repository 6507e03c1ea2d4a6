#!/bin/sh
# Installs Starman (prefork PSGI server) from Debian when missing; quiet when installed.
set -eu
if ! command -v starman > /dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q starman > /dev/null
fi
