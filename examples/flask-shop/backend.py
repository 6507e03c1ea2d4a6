"""The shop's external services on one port: inventory (fast) and the audit logger (slow).

The audit logger answers after AUDIT_DELAY_MS (default 40 ms): the slow external
service of field notes §4. HTTP/1.1 with keep-alive, one thread per connection.
"""

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DELAY = float(os.environ.get("AUDIT_DELAY_MS", "40")) / 1000.0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The headers and the body go out in two writes; with Nagle's algorithm the
    # body waits for the ACK of the headers, which a kept-alive client delays by
    # 40 ms: a stall of the test backend, not of the shop (as a real inventory
    # service, which sets TCP_NODELAY, would not stall).
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def _reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        sku = self.path.rsplit("/", 1)[-1]
        self._reply({"sku": sku, "count": (len(sku) * 7) % 13 + 1})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        time.sleep(DELAY)
        self._reply({"ok": True})


def exit_with(parent):
    """The backend runs outside the shop's process tree (so it is not profiled as the shop);
    it stops when the shop that started it is gone."""
    while True:
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            os._exit(0)
        except PermissionError:
            pass
        time.sleep(0.5)


if __name__ == "__main__":
    port = int(sys.argv[1])
    if len(sys.argv) > 2:
        threading.Thread(target=exit_with, args=(int(sys.argv[2]),), daemon=True).start()
    ThreadingHTTPServer.daemon_threads = True
    # The previous case's backend may hold the port for up to half a second
    # after its shop is gone (it polls its parent): wait for it rather than
    # exit, or every call of this case's shop would fail.
    for attempt in range(100):
        try:
            srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
            break
        except OSError as e:
            if e.errno != 98 or attempt == 99:
                raise
            time.sleep(0.1)
    print(f"backend listening on {port}", flush=True)
    srv.serve_forever()
