"""A small aiohttp shop on one asyncio event loop: the corpus's asyncio service.

CAUSES (comma-separated, naive mode only):
  blocking  the audit record is posted with a synchronous HTTP client inside the
            coroutine: the call blocks the event loop for the audit logger's 40 ms,
            and every other request on the loop waits with it
MODE=tuned posts the audit record from a task with aiohttp's own client (the loop
serves other requests while it waits) and does not wait for it.
"""

import asyncio
import http.client
import json
import logging
import os
import sys
import threading
import time as _time

from aiohttp import ClientSession, ClientTimeout, web
from aiohttp.abc import AbstractAccessLogger

MODE = os.environ.get("MODE", "naive")
CAUSES = set() if MODE == "tuned" else {
    c.strip() for c in os.environ.get("CAUSES", "").split(",") if c.strip()
}
KNOWN = {"blocking"}
if CAUSES - KNOWN:
    raise SystemExit(f"aio-shop: unknown CAUSES {sorted(CAUSES - KNOWN)} (known: {sorted(KNOWN)})")
BACKEND_PORT = int(os.environ.get("BACKEND_PORT", "0"))


_blocking_conn = None


def post_audit_blocking(record):
    """The cause: a synchronous client on the event loop's thread (over one kept-alive
    connection: the wait is the cause, not the connect)."""
    global _blocking_conn
    if _blocking_conn is None:
        _blocking_conn = http.client.HTTPConnection("127.0.0.1", BACKEND_PORT, timeout=5)
    try:
        _blocking_conn.request("POST", "/audit", body=json.dumps(record), headers={"Content-Type": "application/json"})
        _blocking_conn.getresponse().read()
    except (http.client.HTTPException, OSError):
        _blocking_conn.close()
        _blocking_conn = None
        raise


async def post_audit_async(session, record):
    try:
        async with session.post(f"http://127.0.0.1:{BACKEND_PORT}/audit", json=record) as r:
            await r.read()
    except Exception:  # an audit record lost is not the request's failure
        pass


def quote(sku):
    """The request's own work: price a basket."""
    total = 0.0
    for i in range(300):
        total += ((sku * 31 + i * 17) % 997) / 10.0
    return round(total, 2)


async def basket(request):
    sku = int(request.match_info.get("sku", "7"))
    total = quote(sku)
    record = {"sku": sku, "total": total}
    if "blocking" in CAUSES:
        post_audit_blocking(record)
    else:
        task = asyncio.get_running_loop().create_task(post_audit_async(request.app["session"], record))
        request.app["pending"].add(task)
        task.add_done_callback(request.app["pending"].discard)
    return web.json_response({"sku": sku, "total": total})


async def on_startup(app):
    app["session"] = ClientSession(timeout=ClientTimeout(total=5))
    app["pending"] = set()


async def on_cleanup(app):
    await app["session"].close()


class LtsvAccessLogger(AbstractAccessLogger):
    """LTSV lines as flask-shop's gunicorn writes them (time as [day/Mon/year:H:M:S zone])."""

    def log(self, request, response, time):
        stamp = _time.strftime("[%d/%b/%Y:%H:%M:%S +0000]", _time.gmtime())
        self.logger.info(
            f"time:{stamp}\tmethod:{request.method}\turi:{request.path}\t"
            f"status:{response.status}\tsize:{response.body_length}\treqtime:{time:.6f}"
        )


def _exit_with_parent(parent):
    """A forked worker leaves when the process that started it is gone."""
    while os.getppid() == parent:
        _time.sleep(0.5)
    os._exit(0)


def main():
    port = int(sys.argv[1])
    # One event loop per core, as a tuned asyncio service runs (one loop uses one
    # core); forked before any loop exists, sharing the port with SO_REUSEPORT.
    workers = max(1, int(os.environ.get("WORKERS", "1")))
    parent = os.getpid()
    for _ in range(workers - 1):
        if os.fork() == 0:
            threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()
            break
    app = web.Application()
    app.router.add_get("/", basket)
    app.router.add_get("/basket/{sku}", basket)
    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    logger = logging.getLogger("aio-shop.access")
    log = os.environ.get("ACCESS_LOG")
    if log:
        handler = logging.FileHandler(log)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    web.run_app(
        app,
        host="127.0.0.1",
        port=port,
        access_log=logger if log else None,
        access_log_class=LtsvAccessLogger,
        reuse_port=workers > 1,
        print=lambda *_: print(f"aio-shop listening on {port}", flush=True),
    )


if __name__ == "__main__":
    main()
