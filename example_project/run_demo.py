#!/usr/bin/env python3
"""Serve the demo site and crawl it, offline, in one command::

    python example_project/run_demo.py [scrapy crawl options, e.g. -s SIMHASH_ACTION=mark]

The site (``demo_site/``) has six articles sharing one template, and five copies: the
home page under a second URL, a mirror of an article in another template, a print
version, an article under a session-id URL, and one under a tracking URL whose sidebar
shows another ad.

The site is served on port 8765 (another free port if that one is taken), the same on
every run, so a crawl paused with ``-s JOBDIR=...`` resumes against the same URLs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from scrapy.cmdline import execute

from serve_demo import start_server

#: A fixed port: the URLs of a paused (JOBDIR) or stored-index crawl stay valid.
DEMO_PORT = 8765

if __name__ == "__main__":
    try:
        server = start_server(port=DEMO_PORT)
    except OSError:
        server = start_server()
        print(f"port {DEMO_PORT} is taken: serving on {server.server_address[1]}", file=sys.stderr)
    os.chdir(Path(__file__).resolve().parent)  # where scrapy.cfg is
    start_url = f"http://127.0.0.1:{server.server_address[1]}/"
    execute(["scrapy", "crawl", "demo", "-a", f"start_url={start_url}", *sys.argv[1:]])
