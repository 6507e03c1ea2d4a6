"""gunicorn hook: say the port once the first worker is ready (start.sh's contract)."""

import sys


def when_ready(server):
    for lst in server.LISTENERS:
        print(f"flask-shop listening on {lst.cfg_addr[1]}", flush=True)
        sys.stdout.flush()
