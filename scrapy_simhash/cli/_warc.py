"""WARC (and ARC) crawl archives as input: Common Crawl's format, read with warcio.

Each HTTP response record is one page record, as a JSON line of ``dedup`` would be:
``{"id": <WARC-Target-URI>, "url": <the same>, "html": <body bytes>, "encoding": <charset of
its Content-Type, if any>}``. Other records (requests, metadata, revisits) are skipped.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from typing import Any

#: The file names read as crawl archives (warcio reads them gzipped or not).
ARCHIVE_SUFFIXES = (".warc", ".warc.gz", ".arc", ".arc.gz")
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
    except (ArchiveLoadFailed, StatusAndHeadersParserException, EOFError, zlib.error, ValueError) as exc:
        raise OSError(f"{path}: not a readable crawl archive ({exc})") from exc


def _responses(path: str, archive_iterator: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, "rb") as stream:
        for number, record in enumerate(archive_iterator(stream, arc2warc=True), start=1):
            if record.rec_type != "response":
                continue
            url = record.rec_headers.get_header("WARC-Target-URI")
            content_type = record.http_headers.get_header("Content-Type", "") if record.http_headers else ""
            charset = _CHARSET.search(content_type)
            yield number, {
                "id": url,
                "url": url,
                "html": record.content_stream().read(),  # de-chunked and decompressed
                "encoding": charset.group(1) if charset else None,
            }
