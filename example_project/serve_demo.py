#!/usr/bin/env python3
"""Serve a static site on 127.0.0.1, with the routes of its ``_routes.json`` (stdlib only).

    python serve_demo.py                 # the demo site, on http://127.0.0.1:8000/
    python serve_demo.py SITE --port 0   # any site in the corpus layout, on a free port

A request whose raw path (path, ``;params`` and ``?query``, exactly as linked) is a
key of ``SITE/_routes.json`` gets the routed file: print versions, session-id and
tracking URLs. Anything else is a static file, ``;params`` and ``?query`` ignored.
This is the layout of ``../shared/corpus/dev/site.tar.gz`` too.
"""

from __future__ import annotations

import argparse
import json
import posixpath
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

DEMO_SITE = Path(__file__).resolve().parent / "demo_site"


class RoutedHandler(SimpleHTTPRequestHandler):
    def __init__(self, *args: Any, routes: dict[str, str], **kwargs: Any) -> None:
        self.routes = routes
        super().__init__(*args, **kwargs)

    def translate_path(self, path: str) -> str:
        root = Path(self.directory).resolve()
        target = self.routes.get(path)
        if target is None:
            raw = urlsplit(path).path.split(";", 1)[0]
            target = posixpath.normpath(unquote(raw)).lstrip("/")
            if raw.endswith("/"):
                target = f"{target}/index.html".lstrip("/")
        full = (root / target).resolve()
        return str(full if full.is_relative_to(root) else root / "__outside__")

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the crawl log is the show
        pass


def start_server(site: Path = DEMO_SITE, port: int = 0) -> ThreadingHTTPServer:
    """Serve *site* from a daemon thread; ``server.server_address[1]`` is the port."""
    routes_file = site / "_routes.json"
    routes = json.loads(routes_file.read_text(encoding="utf-8")) if routes_file.exists() else {}
    handler = partial(RoutedHandler, directory=str(site), routes=routes)
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", nargs="?", type=Path, default=DEMO_SITE)
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    server = start_server(args.site, args.port)
    print(f"serving {args.site} on http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C to stop)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()


if __name__ == "__main__":
    main()
