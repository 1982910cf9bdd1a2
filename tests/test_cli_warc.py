"""Crawl archives (WARC, Common Crawl's format) as input of dedup and fingerprint."""

from __future__ import annotations

import json
from io import BytesIO
from pathlib import Path

import pytest

pytest.importorskip("warcio")

from conftest import DEMO_SITE  # noqa: E402
from warcio.statusandheaders import StatusAndHeaders  # noqa: E402
from warcio.warcwriter import WARCWriter  # noqa: E402

from scrapy_simhash import Fingerprinter  # noqa: E402
from scrapy_simhash.cli import main  # noqa: E402

ARTICLE = (DEMO_SITE / "articles" / "coffee-roasting.html").read_bytes()
MIRROR = (DEMO_SITE / "mirror" / "coffee-roasting.html").read_bytes()
OTHER = (DEMO_SITE / "articles" / "compost.html").read_bytes()


def write_warc(path: Path) -> None:
    """Three HTML responses (one in Latin-1), an image, a request and a metadata record."""
    with open(path, "wb") as output:
        writer = WARCWriter(output, gzip=path.suffix == ".gz")

        def response(url: str, body: bytes, content_type: str = "text/html; charset=utf-8") -> None:
            headers = StatusAndHeaders("200 OK", [("Content-Type", content_type)], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(url, "response", payload=BytesIO(body),
                                                          http_headers=headers))

        writer.write_record(writer.create_warc_record("http://a.test/", "request", payload=BytesIO(b"GET / HTTP/1.1\r\n\r\n")))
        response("http://a.test/coffee", ARTICLE)
        response("http://b.test/mirror/coffee", MIRROR)
        response("http://a.test/compost", OTHER.decode().replace("\u2019", "'").encode("latin-1", "replace"),
                 "text/html; charset=ISO-8859-1")
        response("http://a.test/logo.png", b"\x89PNG\r\n\x1a\n" + bytes(64), "image/png")
        writer.write_record(writer.create_warc_record("http://a.test/coffee", "metadata", payload=BytesIO(b"x: y")))


@pytest.mark.parametrize("name", ["crawl.warc", "crawl.warc.gz"])
def test_dedup_reads_the_response_records_of_a_warc(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / name
    write_warc(archive)
    assert main(["dedup", str(archive), "-q"]) == 0
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["id"] for r in results] == ["http://a.test/coffee", "http://b.test/mirror/coffee",
                                          "http://a.test/compost", "http://a.test/logo.png"]
    assert results[0]["fingerprint"] == f"{Fingerprinter().from_html(ARTICLE).fingerprint:016x}"
    assert results[1]["duplicate_of"] == "http://a.test/coffee"
    assert results[2]["fingerprint"] is not None and results[2]["duplicate_of"] is None
    assert results[3]["skip_reason"] == "binary"


def test_fingerprint_reads_a_warc_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    archive = tmp_path / "crawl.warc.gz"
    write_warc(archive)
    assert main(["fingerprint", "--jsonl", str(archive)]) == 0
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    assert "fingerprint: 4 records, 1 skipped" in err  # its progress (-q: none)
    assert len(rows) == 4 and rows[0] == {"id": "http://a.test/coffee",
                                          "fingerprint": f"{Fingerprinter().from_html(ARTICLE).fingerprint:016x}"}


def test_a_damaged_archive_is_an_error_line_not_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    archive = tmp_path / "broken.warc.gz"
    archive.write_bytes(b"\x1f\x8b not really gzip")
    assert main(["dedup", str(archive), "-q"]) == 1
    assert "scrapy-simhash: dedup: " in capsys.readouterr().err


def record_span(archive: Path, number: int) -> tuple[int, int]:
    """Where record *number* (from 1) of *archive* starts, and its length there."""
    from warcio.archiveiterator import ArchiveIterator

    with open(archive, "rb") as stream:
        records = ArchiveIterator(stream)
        for seen, _ in enumerate(records, start=1):
            if seen == number:
                return records.get_record_offset(), records.get_record_length()
    raise AssertionError(f"no record {number}")


@pytest.mark.parametrize("name", ["crawl.warc", "crawl.warc.gz"])
@pytest.mark.parametrize("where", ["body", "headers"])
def test_a_truncated_archive_is_an_error_and_its_cut_off_record_is_not_fingerprinted(
    tmp_path: Path, name: str, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / name
    write_warc(archive)
    start, length = record_span(archive, 4)  # the third page's (after a request and two pages)
    cut = start + (length // 2 if where == "body" else 200)  # (headers: after its WARC-Target-URI)
    archive.write_bytes(archive.read_bytes()[:cut])
    assert main(["fingerprint", "--jsonl", str(archive), "-q"]) == 1
    out, err = capsys.readouterr()
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["http://a.test/coffee", "http://b.test/mirror/coffee"]
    assert f"{archive}: " in err and "(a truncated archive)" in err
