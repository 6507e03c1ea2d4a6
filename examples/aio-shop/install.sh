#!/bin/sh
# Installs aiohttp from PyPI when missing; quiet when already installed.
set -eu
if ! python3 -c 'import aiohttp' 2>/dev/null; then
  python3 -m pip install -q 'aiohttp>=3.9,<4' >&2 2>/dev/null ||
    python3 -m pip install -q --break-system-packages 'aiohttp>=3.9,<4' >&2
fi
