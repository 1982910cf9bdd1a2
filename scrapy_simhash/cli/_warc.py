"""WARC (and ARC) crawl archives as input: Common Crawl's format, read with warcio.

Each HTTP response record is one page record, as a JSON line of ``dedup`` would be:
``{"id": <WARC-Target-URI>, "url": <the same>, "html": <body bytes>, "encoding": <charset of
its Content-Type, if any>}``. Other records (requests, metadata, revisits) are skipped.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterator
from typing import Any

#: The file names read as crawl archives (warcio reads them gzipped or not).
ARCHIVE_SUFFIXES = (".warc", ".warc.gz", ".arc", ".arc.gz")
#: Bytes read at a time from what is left of a record.
_DRAIN_SIZE = 65536
_CHARSET = re.compile(r"charset\s*=\s*[\"']?([\w.:-]+)", re.IGNORECASE)


def is_archive(path: str) -> bool:
    return path.lower().endswith(ARCHIVE_SUFFIXES)


def read_archive(path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(record number, page record)`` for each response record of *path*."""
    try:
        from warcio.archiveiterator import ArchiveIterator
        from warcio.exceptions import ArchiveLoadFailed
        from warcio.statusandheaders import StatusAndHeadersParserException
    except ImportError as exc:
        raise ImportError("reading WARC files needs warcio: pip install 'scrapy-simhash[warc]'") from exc
    try:
        yield from _responses(path, ArchiveIterator)
    # (AttributeError: warcio's, on a response record cut in its headers before its WARC-Target-URI)
    except (ArchiveLoadFailed, StatusAndHeadersParserException, EOFError, zlib.error, ValueError,
            AttributeError) as exc:
        raise OSError(f"{path}: not a readable crawl archive ({exc})") from exc


def _responses(path: str, archive_iterator: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, "rb") as stream:
        records = archive_iterator(stream, arc2warc=True)
        for number, record in enumerate(records, start=1):
            if record.rec_type != "response":
                _check_complete(path, number, record)  # a cut in any record is a damaged archive
                continue
            url = record.rec_headers.get_header("WARC-Target-URI")
            content_type = record.http_headers.get_header("Content-Type", "") if record.http_headers else ""
            charset = _CHARSET.search(content_type)
            body = record.content_stream().read()  # de-chunked and decompressed
            _check_complete(path, number, record)
            yield number, {"id": url, "url": url, "html": body, "encoding": charset.group(1) if charset else None}
        if records.offset < os.fstat(stream.fileno()).st_size:  # where the last whole record ended
            raise OSError(f"{path}: ends inside a record's headers, after byte {records.offset} (a truncated archive)")


def _check_complete(path: str, number: int, record: Any) -> None:
    """Raise :exc:`OSError` if the archive ends inside *record*: warcio hands out a cut-off
    body as it is, which would be fingerprinted (and recorded) as a shorter page. An error,
    as a truncated ``.jsonl.gz`` is: the archive is damaged, and the user must know it.
    (An archive cut before a record's Content-Length line ends, to warcio, before that record.)"""
    if record.length is None:  # a WARC record must have one: its headers were cut after a line
        raise OSError(f"{path}: record {number} is cut off in its headers, before its Content-Length "
                      "(a truncated archive)")
    while record.raw_stream.read(_DRAIN_SIZE):  # what the body's decoder left (a chunked body's trailer)
        pass
    missing = getattr(record.raw_stream, "limit", 0)  # a LimitReader's, to the record's Content-Length
    if missing:
        raise OSError(f"{path}: record {number} is cut off, {missing} bytes short of its Content-Length "
                      f"(a truncated archive)")
