"""Pages that answer a form (POST): one URL, as many pages as what was sent. A real crawl of
a server on 127.0.0.1 whose ``/search`` answers each query with its own page."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
import scrapy
from conftest import crawl
from test_follow_dropped import prose

#: query -> the seed of its answer's text: "jupiter" and "jupiter-again" answer alike.
ANSWERS = {"jupiter": 1, "saturn": 2, "mars": 3, "venus": 4, "jupiter-again": 1}


class SearchHandler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802  (http.server's name)
        form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
        query = form["q"][0]
        body = f"<html><head><title>Search</title></head><body><h1>{query}</h1>{prose(ANSWERS[query])}</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


@pytest.fixture(scope="module")
def search_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), SearchHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/search"
    server.shutdown()


class SearchSpider(scrapy.Spider):
    name = "search"
    custom_settings = {"ROBOTSTXT_OBEY": False}

    def __init__(self, url: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.url = url
        self.queries: list[str] = []

    async def start(self) -> Any:
        for query in ANSWERS:
            yield scrapy.FormRequest(self.url, formdata={"q": query}, callback=self.parse, dont_filter=True)

    def parse(self, response: Any) -> Iterator[dict[str, str]]:
        self.queries.append(response.css("h1::text").get())
        yield {"url": response.url, "query": self.queries[-1]}


def test_each_answer_to_a_form_is_a_page_of_its_own(search_url: str, tmp_path: Path) -> None:
    index = {"SIMHASH_INDEX": str(tmp_path / "index")}
    first = crawl(SearchSpider, index, url=search_url)
    stats = first.stats.get_stats()
    assert sorted(first.spider.queries) == sorted(set(ANSWERS) - {"jupiter-again"})
    assert stats["simhash/kept"] == 4 and stats["simhash/dropped"] == 1  # the same answer to another query
    assert "simhash/changed" not in stats  # four pages, not four versions of /search
    assert stats["simhash/index_size/close"] == 4
    again = crawl(SearchSpider, index, url=search_url).stats.get_stats()
    assert again["simhash/unchanged"] == 4 and "simhash/changed" not in again
