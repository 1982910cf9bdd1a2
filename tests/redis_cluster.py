"""Start a real 3-master Redis Cluster on 127.0.0.1 for the tests (not a fake).

Three ``redis-server`` processes (:class:`redis_server.RedisServer`, the same binary) with
``cluster-enabled yes`` on free ports, the 16384 slots split between them with
``CLUSTER ADDSLOTS``, joined with ``CLUSTER MEET``; ready when every node says
``cluster_state:ok`` and knows all three masters. No replicas: a node stopped is its
slots down, which the fault tests want. Made with redis-py alone (no ``redis-cli``).
"""

from __future__ import annotations

import atexit
import itertools
import os
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from redis_server import RedisServer, _free_port, start_or_skip

MASTERS = 3
SLOTS = 16384
_READY_TIMEOUT = 30.0
_BUS_OFFSET = 10000  # a node's cluster bus listens on its port + 10000


class RedisCluster:
    """Three cluster nodes; ``url`` names the first (any node's URL works)."""

    def __init__(self, nodes: list[RedisServer]) -> None:
        self.nodes = nodes

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def wait_until_ready(self) -> None:
        """Until every node says ``cluster_state:ok`` (after nodes were restarted)."""
        import redis

        clients = [redis.Redis(host="127.0.0.1", port=node.port) for node in self.nodes]
        try:
            _wait_until_ready(clients)
        finally:
            for client in clients:
                client.close()

    def close(self) -> None:
        for node in self.nodes:
            node.close()


def start_cluster_or_skip() -> RedisCluster:
    """A running cluster, or ``pytest.skip`` saying why none could be started."""
    nodes: list[RedisServer] = []
    try:
        for _ in range(MASTERS):
            nodes.append(start_or_skip("--cluster-enabled", "yes", "--cluster-node-timeout", "2000",
                                       port=_node_port()))
        _form(nodes)
    except BaseException:
        for node in nodes:
            node.close()
        raise
    return RedisCluster(nodes)


def _form(nodes: list[RedisServer]) -> None:
    import redis

    clients = [redis.Redis(host="127.0.0.1", port=node.port) for node in nodes]
    try:
        share = -(-SLOTS // len(nodes))
        for number, client in enumerate(clients):
            client.execute_command("CLUSTER ADDSLOTS", *range(number * share, min((number + 1) * share, SLOTS)))
        for node in nodes[1:]:
            clients[0].execute_command("CLUSTER MEET", "127.0.0.1", node.port)
        _wait_until_ready(clients)
    finally:
        for client in clients:
            client.close()


def _wait_until_ready(clients: list[Any]) -> None:
    deadline = time.monotonic() + _READY_TIMEOUT
    while time.monotonic() < deadline:
        if all(_ready(client) for client in clients):
            return
        time.sleep(0.05)
    pytest.skip(f"the Redis Cluster did not reach cluster_state:ok in {_READY_TIMEOUT:g} s")


def _ready(client: Any) -> bool:
    fields = client.execute_command("CLUSTER INFO")  # (redis-py parses it into a dict)
    return fields.get("cluster_state") == "ok" and fields.get("cluster_known_nodes") == str(MASTERS)


def _node_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free too, both below 65536."""
    for _ in range(100):
        port = _free_port()
        if port + _BUS_OFFSET < 65536 and _is_free(port + _BUS_OFFSET):
            return port
    raise RuntimeError("no free port pair for a cluster node")


def _is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


_PROCESS_CLUSTER: list[RedisCluster] = []


def process_cluster() -> RedisCluster:
    """One cluster for this test process, started on first use (for index factories)."""
    if not _PROCESS_CLUSTER:
        cluster = start_cluster_or_skip()
        atexit.register(cluster.close)
        _PROCESS_CLUSTER.append(cluster)
    return _PROCESS_CLUSTER[0]


@pytest.fixture(scope="session")
def redis_cluster() -> RedisCluster:
    """The process's 3-master cluster."""
    pytest.importorskip("redis")
    return process_cluster()


@pytest.fixture
def cluster_url(redis_cluster: RedisCluster) -> Iterator[str]:
    """The URL of one node of the cluster, every node flushed."""
    import redis

    for node in redis_cluster.nodes:
        with redis.Redis(host="127.0.0.1", port=node.port) as client:
            client.flushall()
    yield redis_cluster.url


def cluster_index(max_distance: int):
    """A fresh, empty cluster index (its own namespace) on the process's cluster."""
    pytest.importorskip("redis")
    from scrapy_simhash.index.redis.cluster import ClusterIndex

    namespace = f"test-{os.getpid()}-{next(_NAMESPACE_NUMBERS)}"
    return ClusterIndex(process_cluster().url, max_distance, expected_size=1000, namespace=namespace)


_NAMESPACE_NUMBERS = itertools.count()
