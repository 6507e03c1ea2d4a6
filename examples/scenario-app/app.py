#!/usr/bin/env python3
"""A small app with a log-in, for keisoku's scenario tests (stdlib only).

POST /login  {"user": NAME}  -> sets cookie sid=..., returns {"token": ..., "user": NAME}
GET  /me                     -> 401 without a known sid cookie, else {"user": NAME, "id": N, "items": [...]}
GET  /items/ID               -> 200 {"id": ID, "owner": NAME} with the cookie, 401 without, 404 for unknown ids
GET  /stats                  -> {"sessions": N, "requests": {"POST /login": n, ...}} (not logged)

Every request except /stats is appended to the access log (one line:
METHOD PATH STATUS). Usage: app.py PORT ACCESS_LOG (PORT 0: any free port); prints
"listening PORT" once it accepts connections.
"""
import json
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
SESSIONS = {}  # sid -> (user, id)
COUNTS = {}
NEXT_ID = [1000]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # One write per answer (head and body together): unbuffered, the head
    # and the body go as two segments and Nagle plus delayed ACK add 40 ms.
    wbufsize = 1 << 16

    def log_message(self, *args):
        pass

    def send_json(self, status, obj, headers=()):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        if self.path != "/stats":
            key = f"{self.command} {self.route()}"
            with LOCK:
                COUNTS[key] = COUNTS.get(key, 0) + 1
                LOG.write(f"{self.command} {self.path} {status}\n")
                LOG.flush()

    def route(self):
        return "/items/*" if self.path.startswith("/items/") else self.path

    def session(self):
        for part in self.headers.get("Cookie", "").split(";"):
            k, _, v = part.strip().partition("=")
            if k == "sid":
                with LOCK:
                    return SESSIONS.get(v)
        return None

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        if self.path != "/login":
            return self.send_json(404, {"error": "not found"})
        try:
            user = json.loads(raw)["user"]
        except (ValueError, KeyError, TypeError):
            return self.send_json(400, {"error": "bad login"})
        sid = uuid.uuid4().hex
        with LOCK:
            NEXT_ID[0] += 1
            SESSIONS[sid] = (user, NEXT_ID[0])
        self.send_json(200, {"token": sid[:8], "user": user},
                       [("Set-Cookie", f"sid={sid}; Path=/; HttpOnly")])

    def do_GET(self):
        if self.path == "/stats":
            with LOCK:
                body = {"sessions": len(SESSIONS), "requests": dict(COUNTS)}
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        s = self.session()
        if self.path == "/me":
            if s is None:
                return self.send_json(401, {"error": "log in first"})
            return self.send_json(200, {"user": s[0], "id": s[1], "items": [s[1], s[1] + 1]})
        if self.path.startswith("/items/"):
            if s is None:
                return self.send_json(401, {"error": "log in first"})
            tail = self.path[len("/items/"):]
            if not tail.isdigit():
                return self.send_json(404, {"error": "no such item"})
            return self.send_json(200, {"id": int(tail), "owner": s[0]})
        self.send_json(404, {"error": "not found"})


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024


if __name__ == "__main__":
    port = int(sys.argv[1])
    LOG = open(sys.argv[2], "a", encoding="utf-8")
    srv = Server(("127.0.0.1", port), Handler)
    print(f"listening {srv.server_address[1]}", flush=True)
    srv.serve_forever()
