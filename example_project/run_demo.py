#!/usr/bin/env python3
"""Serve the demo site and crawl it, offline, in one command::

    python example_project/run_demo.py [scrapy crawl options, e.g. -s SIMHASH_ACTION=mark]

The site (``demo_site/``) has six articles sharing one template, plus four copies
of three of them: a mirror in another template, a print version, the same page
under a session-id URL, and a tracking URL whose sidebar shows another ad.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from scrapy.cmdline import execute

from serve_demo import start_server

if __name__ == "__main__":
    server = start_server()
    os.chdir(Path(__file__).resolve().parent)  # where scrapy.cfg is
    start_url = f"http://127.0.0.1:{server.server_address[1]}/"
    execute(["scrapy", "crawl", "demo", "-a", f"start_url={start_url}", *sys.argv[1:]])
