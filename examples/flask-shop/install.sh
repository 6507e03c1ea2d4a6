#!/bin/sh
# Installs Flask and gunicorn from PyPI when missing; quiet when already installed.
set -eu
if ! python3 -c 'import flask, gunicorn' 2>/dev/null; then
  python3 -m pip install -q 'flask>=3,<4' 'gunicorn>=22' >&2
fi
