#!/usr/bin/env python3
"""Writes the bid log a previous bidder process left behind: BYTES of yesterday's bids.

usage: prefill-bid-log.py FILE BYTES

The naive bid log (cause "rollover") is rolled by size and gzip-compressed inside the
appender lock. How long that stalls the request threads depends on the size of the file
being compressed, not on how fast the bidder writes: so the file starts just under the
size limit (start.sh), and the first rollover compresses a whole, realistic file on any
host, quiet or crowded. The lines have the bidder's own layout (logback's pattern, the
bid response of Bidder.bid) with yesterday's mix of segments, user agents and prices, so
they compress like a real bid log (a log of one repeated bid compresses several times
faster and would plant a shorter stall).
"""
import random
import sys

UAS = [
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/119.0.6045.160 Safari/537.36 Edg/119.0.2151.97",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:120.0) Gecko/20100101 Firefox/120.0",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.43 Mobile Safari/537.36",
]
PLATFORMS = ["X11", "Windows NT 10.0", "iPhone", "Macintosh", "Linux"]
# Distinct bodies: more than the compressor's 32 KB window holds, so repeats do not help it.
BODIES = 512


def body(rng: random.Random) -> str:
    seg = rng.randrange(64)
    k = rng.randrange(len(UAS))
    bids = []
    price = 3.0
    stamp = "2026-11-23T%02d:%02d:%02d.%03dZ" % (rng.randrange(24), rng.randrange(60), rng.randrange(60), rng.randrange(1000))
    for _ in range(24):
        price -= rng.random() * 0.01
        bids.append('{"campaign":%d,"price":"%.4f","at":"%s"}' % (rng.randrange(60000), price, stamp))
    response = '{"segment":%d,"platform":"%s","bids":[%s]}' % (seg, PLATFORMS[k], ",".join(bids))
    return "bidder.bids - bid seg=%d ua=%s platform=%s response=%s" % (seg, UAS[k], PLATFORMS[k], response)


def main() -> int:
    if len(sys.argv) != 3 or not sys.argv[2].isdigit():
        print("usage: prefill-bid-log.py FILE BYTES", file=sys.stderr)
        return 2
    path, want = sys.argv[1], int(sys.argv[2])
    rng = random.Random(7)
    bodies = [body(rng) for _ in range(BODIES)]
    written = 0
    n = 0
    with open(path, "w", encoding="ascii") as out:
        while True:
            ms = n * 3
            line = "2026-11-23 %02d:%02d:%02d,%03d INFO  [pool-1-thread-%d] %s trace=%016x%012x\n" % (
                ms // 3_600_000 % 24, ms // 60_000 % 60, ms // 1000 % 60, ms % 1000,
                1 + n % 16, bodies[rng.randrange(BODIES)], rng.getrandbits(64), rng.getrandbits(48))
            if written + len(line) >= want:
                # Exactly BYTES: the last line cut short, as a log cut mid-write would be.
                out.write(line[: want - written - 1] + "\n" if want > written else "")
                break
            out.write(line)
            written += len(line)
            n += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
