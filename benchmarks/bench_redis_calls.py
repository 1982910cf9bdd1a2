"""The crawler's CPU per script call: through redis-py's API, against the wire format written by hand.

    python benchmarks/bench_redis_calls.py                 # 7 rounds of 4,000 calls each way
    python benchmarks/bench_redis_calls.py --rounds 3 --calls 1000

The index calls its scripts through redis-py (``Script``: ``EVALSHA`` through the client's
pool, its retries and hooks). An earlier version wrote ``EVALSHA`` in Redis' wire format
(RESP) itself and sent it on a connection taken out of the pool: this measures what that
saved, on a script that returns at once, with 3 keys and 15 arguments shaped like a check's,
so that the call's own cost is all there is. Rounds alternate the two ways; the medians
and ranges of the CPU time per call (``time.process_time``) are printed. A throwaway
``redis-server`` as the tests start it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import redis

from scrapy_simhash.index.redis._client import connect

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from redis_server import RedisServer, find_redis_server  # noqa: E402

_KEYS = ["simhash:bench:meta", "simhash:bench:n", "simhash:bench:x"]
_ARGS: list[Any] = [b"\x01" * 8, b"\xfe" * 8, 3, b"\x05example.com/a.html", bytes(32), 12, 500, 1000, 2,
                    b"\x07" * 8, 64, b"abcd", 0, 17, 99]


def resp(args: Iterable[Any]) -> bytes:
    """Arguments in Redis' wire format, as the earlier version packed them."""
    parts = []
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode()
        parts.append(b"$%d\r\n%b\r\n" % (len(data), data))
    return b"".join(parts)


def by_hand(client: redis.Redis, sha: str) -> Callable[[], Any]:
    connection = client.connection_pool.make_connection()  # held, as the earlier version held one
    head = resp(["EVALSHA", sha, len(_KEYS), *_KEYS])
    count = 3 + len(_KEYS) + len(_ARGS)

    def call() -> Any:
        connection.send_packed_command([b"*%d\r\n%b%b" % (count, head, resp(_ARGS))])
        return connection.read_response()

    return call


def cpu_per_call(call: Callable[[], Any], calls: int) -> float:
    started = time.process_time()
    for _ in range(calls):
        call()
    return (time.process_time() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=4000, help="calls per round and way")
    args = parser.parse_args()
    server = RedisServer(find_redis_server() or sys.exit("no redis-server found"))
    server.start()
    try:
        client = connect(server.url)
        script = client.register_script("return 1")
        script(keys=_KEYS, args=_ARGS)  # (loaded: the hand-written EVALSHA finds it)
        ways: dict[str, Callable[[], Any]] = {
            "redis-py Script": lambda: script(keys=_KEYS, args=_ARGS), "by hand": by_hand(client, script.sha)
        }
        times: dict[str, list[float]] = {way: [] for way in ways}
        for _ in range(args.rounds):
            for way, call in ways.items():
                times[way].append(cpu_per_call(call, args.calls))
        print(f"redis-py {redis.__version__}, {args.rounds} rounds of {args.calls:,} calls each way")
        for way, values in times.items():
            print(f"{way:>16}: {statistics.median(values):5.1f} us of CPU a call"
                  f" (range {min(values):.1f}-{max(values):.1f})")
        client.close()
    finally:
        server.close()


if __name__ == "__main__":
    main()
