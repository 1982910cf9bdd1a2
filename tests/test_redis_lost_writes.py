"""A Redis that loses writes a worker had seen: a restart from an older snapshot, a
replica promoted before it had the last writes. A worker never reports a match that
Redis does not hold, and finds what Redis does hold (its copy of the log is noticed to
have diverged at its next call, and read afresh)."""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Iterator

import pytest

redis = pytest.importorskip("redis")

from redis_server import RedisServer, own_redis_server, start_or_skip  # noqa: E402,F401  (fixture)

from scrapy_simhash.index.redis import RedisIndex  # noqa: E402

RNG = random.Random(14)
A_PAGES = [(RNG.getrandbits(64), f"https://a.example/{n}") for n in range(50)]
B_PAGE = RNG.getrandbits(64)
C_PAGES = [(RNG.getrandbits(64), f"https://c.example/{n}") for n in range(5)]


def lose_the_last_writes(crawler: RedisIndex, remove: bool, fail_over: callable) -> None:
    """*crawler* stores a page (and removes one) that Redis then loses in *fail_over*;
    another crawler stores pages after it, so the log is again as long as the crawler's
    copy, with other records in the places it remembers."""
    assert crawler.replace_if_new(B_PAGE, "https://b.example/page").match is None
    if remove:
        assert crawler.remove_key(A_PAGES[3][1]) == 1
    fail_over()
    with RedisIndex(crawler.url, namespace=crawler.namespace) as other:
        for fingerprint, key in C_PAGES:
            assert other.replace_if_new(fingerprint, key).match is None


def assert_answers_from_what_redis_holds(crawler: RedisIndex) -> None:
    # the lost page is not in Redis: its copy is new, not a duplicate of what holds its place
    assert crawler.replace_if_new(B_PAGE ^ 1, "https://b.example/copy").match is None
    # what Redis holds is found: the other crawler's pages, and a-3 (its removal was lost)
    assert [m.key for m in crawler.query(C_PAGES[0][0] ^ 2)] == [C_PAGES[0][1]]
    assert [m.key for m in crawler.query(A_PAGES[3][0])] == [A_PAGES[3][1]]
    assert crawler.fingerprints_of("https://b.example/page") == []


@pytest.mark.parametrize("remove", [False, True], ids=["records lost", "records and a removal lost"])
def test_a_restart_from_an_older_snapshot(own_redis_server: RedisServer, remove: bool) -> None:
    server = own_redis_server

    def restart_from_the_snapshot() -> None:
        server.stop()  # (saving nothing: the server runs with --save "")
        server.start()

    with RedisIndex(server.url, namespace="lost") as crawler:
        crawler.add_many(A_PAGES)
        with redis.Redis.from_url(server.url) as client:
            client.save()  # the snapshot: the first 50 pages
        lose_the_last_writes(crawler, remove, restart_from_the_snapshot)
        assert_answers_from_what_redis_holds(crawler)


class Failover:
    """A TCP proxy on 127.0.0.1 in front of a Redis server, moved to another one as a
    failover moves a virtual IP or a DNS name: connections to the old one are cut."""

    def __init__(self, port: int) -> None:
        self.target = port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self._open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(source, sink), daemon=True).start()

    def move_to(self, port: int) -> None:
        self.target = port
        for connection in self._open:
            connection.close()
        self._open = []

    def close(self) -> None:
        self._listener.close()
        self.move_to(self.target)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for connection in (source, sink):
            connection.close()


def wait_until_replicated(primary: RedisServer, replica: RedisServer, timeout: float = 30.0) -> None:
    """Until the replica has all the primary wrote (its first sync included)."""
    with redis.Redis.from_url(primary.url) as to_primary, redis.Redis.from_url(replica.url) as to_replica:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            wanted = to_primary.info("replication")["master_repl_offset"]
            state = to_replica.info("replication")
            if state.get("master_link_status") == "up" and state.get("slave_repl_offset", -1) >= wanted:
                return
            time.sleep(0.05)
    pytest.fail(f"the replica did not catch up in {timeout:g} s")


@pytest.fixture
def primary_and_replica() -> Iterator[tuple[RedisServer, RedisServer]]:
    primary = start_or_skip()
    replica = start_or_skip("--replicaof", "127.0.0.1", str(primary.port))
    yield primary, replica
    replica.close()
    primary.close()


def test_a_replica_promoted_before_it_had_the_last_writes(primary_and_replica: tuple[RedisServer, RedisServer]) -> None:
    primary, replica = primary_and_replica
    failover = Failover(primary.port)
    try:
        with RedisIndex(f"redis://127.0.0.1:{failover.port}/0", namespace="lost") as crawler:
            crawler.add_many(A_PAGES)
            wait_until_replicated(primary, replica)  # the replica has the first 50 pages
            with redis.Redis.from_url(replica.url) as client:
                client.replicaof("NO", "ONE")  # promoted: it gets no more writes from the primary
            lose_the_last_writes(crawler, True, lambda: failover.move_to(replica.port))
            assert_answers_from_what_redis_holds(crawler)
    finally:
        failover.close()


@pytest.mark.parametrize("read_ahead", [False, True], ids=["by the check script", "by plain reads"])
def test_a_lost_removal_replaced_by_another(
    own_redis_server: RedisServer, read_ahead: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis loses a removal the crawler made, then another crawler removes another page:
    as many removals as the crawler saw, but not the same ones. The crawler notices (the
    last removal it saw is compared too), finds the page whose removal was lost, and
    learns of the other removal."""
    from scrapy_simhash.index.redis import _session

    server = own_redis_server
    if read_ahead:  # every check reads the log's end first (plain reads, not the script)
        monkeypatch.setattr(_session.BacklogForecast, "expected", lambda self: _session._READ_AHEAD_AT)
    with RedisIndex(server.url, namespace="lost") as crawler:
        crawler.add_many(A_PAGES)
        with redis.Redis.from_url(server.url) as client:
            client.save()  # the snapshot: 50 pages, no removal
        assert crawler.remove_key(A_PAGES[3][1]) == 1
        server.stop()
        server.start()  # a-3's removal lost
        with RedisIndex(server.url, namespace="lost") as other:
            assert other.remove_key(A_PAGES[5][1]) == 1
        assert crawler.replace_if_new(A_PAGES[3][0] ^ 1, "https://a.example/copy").match.key == A_PAGES[3][1]
        assert [m.key for m in crawler.query(A_PAGES[3][0])] == [A_PAGES[3][1]]
        assert crawler.query(A_PAGES[5][0]) == []
        assert crawler.describe()["removed_records"] == 1
