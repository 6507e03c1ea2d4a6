"""A small Flask shop served by gunicorn: the corpus's Python service.

CAUSES (comma-separated) plants field notes §4's causes one at a time or stacked:
  slowcall   a synchronous POST to a slow external logger inside the request
  config     the shop settings re-read from disk and parsed on every request
  nokeepalive  a new TCP connection to the inventory backend for every request
  oneworker  one sync worker on a multi-core host (start.sh reads it)
MODE=tuned removes all of them (the logger call is queued to a background
thread, settings are read once, the backend connection is kept alive).
MODE=gthread plants CAUSES as naive does, on gunicorn's threaded workers
(start.sh): without causes, the tuned shop served from a thread pool.
"""

import configparser
import http.client
import json
import os
import queue
import threading

from flask import Flask, Response

MODE = os.environ.get("MODE", "naive")
CAUSES = set() if MODE == "tuned" else {
    c.strip() for c in os.environ.get("CAUSES", "").split(",") if c.strip()
}
KNOWN = {"slowcall", "config", "nokeepalive", "oneworker"}
if CAUSES - KNOWN:
    raise SystemExit(f"flask-shop: unknown CAUSES {sorted(CAUSES - KNOWN)} (known: {sorted(KNOWN)})")

HERE = os.path.dirname(os.path.abspath(__file__))
SETTINGS_PATH = os.environ.get("SHOP_SETTINGS", os.path.join(HERE, "shop-settings.ini"))
BACKEND_PORT = int(os.environ.get("BACKEND_PORT", "0"))

app = Flask(__name__)


def load_shop_settings():
    """Parses the settings file; naive mode does this per request (the cause)."""
    parser = configparser.ConfigParser()
    with open(SETTINGS_PATH, encoding="utf-8") as f:
        parser.read_file(f)
    return {s: dict(parser.items(s)) for s in parser.sections()}


_SETTINGS = load_shop_settings()
_local = threading.local()
_audit_queue = queue.Queue(maxsize=10000)


def settings():
    return load_shop_settings() if "config" in CAUSES else _SETTINGS


def backend_connection(purpose):
    """A connection to the backend for one purpose ("stock", "audit"): new per call with
    the cause nokeepalive (for stock lookups, the planted cause), else one kept alive per
    thread and purpose, as a pooled client would."""
    if purpose == "stock" and "nokeepalive" in CAUSES:
        return http.client.HTTPConnection("127.0.0.1", BACKEND_PORT, timeout=5), True
    conns = getattr(_local, "conns", None)
    if conns is None:
        conns = _local.conns = {}
    conn = conns.get(purpose)
    if conn is None:
        conn = conns[purpose] = http.client.HTTPConnection("127.0.0.1", BACKEND_PORT, timeout=5)
    return conn, False


def call_backend(purpose, method, path, body=None):
    conn, close = backend_connection(purpose)
    headers = {"Connection": "close" if close else "keep-alive"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    try:
        conn.request(method, path, body=body, headers=headers)
        data = conn.getresponse().read()
    except (http.client.HTTPException, OSError):
        # A kept connection the backend dropped: the next call opens a fresh one.
        conn.close()
        getattr(_local, "conns", {}).pop(purpose, None)
        raise
    finally:
        if close:
            conn.close()
    return data


def fetch_stock(sku):
    return json.loads(call_backend("stock", "GET", f"/stock/{sku}"))


def post_audit_record_sync(record):
    """The cause of field notes §4: a synchronous call to a slow external logger
    (over a kept-alive connection: the wait is the cause, not the connect)."""
    call_backend("audit", "POST", "/audit", body=json.dumps(record))


def _audit_sender():
    while True:
        batch = [_audit_queue.get()]
        while not _audit_queue.empty() and len(batch) < 100:
            batch.append(_audit_queue.get_nowait())
        try:
            post_audit_record_sync({"batch": batch})
        except (http.client.HTTPException, OSError):
            pass


def audit(record):
    if "slowcall" in CAUSES:
        post_audit_record_sync(record)
    else:
        if getattr(_local, "sender", None) is None and not getattr(app, "_sender_started", False):
            app._sender_started = True
            threading.Thread(target=_audit_sender, daemon=True).start()
        try:
            _audit_queue.put_nowait(record)
        except queue.Full:
            pass


def price_basket(conf, sku):
    """The real work of a request: price a basket of items."""
    tax = float(conf["pricing"]["tax_rate"])
    total = 0.0
    for i in range(300):
        total += ((sku * 31 + i * 17) % 997) / 10.0 * (1 + tax)
    return round(total, 2)


@app.route("/")
@app.route("/basket/<int:sku>")
def basket(sku=7):
    conf = settings()
    stock = fetch_stock(sku) if BACKEND_PORT else {"sku": sku, "count": 1}
    total = price_basket(conf, sku)
    audit({"sku": sku, "total": total})
    return Response(json.dumps({"sku": sku, "stock": stock["count"], "total": total}), mimetype="application/json")
