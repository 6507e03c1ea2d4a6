#!/bin/sh
# Installs Starman (prefork PSGI server) from Debian when missing; quiet when installed.
set -eu
if ! command -v starman > /dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -q starman > /dev/null 2>&1 ||
    { $SUDO apt-get update -qq && $SUDO apt-get install -y -q starman > /dev/null; }
fi
