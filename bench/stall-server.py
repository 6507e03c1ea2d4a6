#!/usr/bin/env python3
"""A 1-s-in-5-s stall server: HTTP/1.1 keep-alive on 127.0.0.1, answering
"ok" at once except in the last second of every 5-second cycle (counted
from its start), when every answer waits for the cycle's end. Open-model
latency theory for a run covering whole cycles: 20% of requests wait
uniformly 0..1 s, so p90 = 500 ms, p80 ~ 0.

    bench/stall-server.py PORT [CYCLE_S STALL_S]

Prints "listening PORT" once ready, then "cycle N" at each cycle's start,
so a test can align a run with the stalls (a signal, not a sleep).
"""
import asyncio
import sys
import time

PORT = int(sys.argv[1])
CYCLE = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
STALL = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
T0 = time.monotonic()
RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Type: text/plain\r\n\r\nok\n"


def hold():
    """Seconds an answer given now must wait (0 outside a stall)."""
    pos = (time.monotonic() - T0) % CYCLE
    return CYCLE - pos if pos >= CYCLE - STALL else 0.0


async def serve(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            if length:
                await reader.readexactly(length)
            wait = hold()
            if wait:
                await asyncio.sleep(wait)
            writer.write(RESPONSE)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def cycles():
    n = 0
    while True:
        print(f"cycle {n}", flush=True)
        n += 1
        await asyncio.sleep(max(0.0, T0 + n * CYCLE - time.monotonic()))


async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", PORT, backlog=1024)
    print(f"listening {PORT}", flush=True)
    async with server:
        await asyncio.gather(server.serve_forever(), cycles())


asyncio.run(main())
