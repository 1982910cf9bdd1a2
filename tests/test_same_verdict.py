"""A fingerprint is a function of the page and the options only: not of the order the pages
come in, nor of the process that fingerprints them (issue "Same page, same verdict")."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CORPUS, needs_corpus

from scrapy_simhash import Fingerprinter

#: Fingerprints the pages of a JSON file in the order given, in a process of its own.
_CHILD = """
import json, sys
from scrapy_simhash import Fingerprinter
pages = json.load(open(sys.argv[1]))
fingerprinter = Fingerprinter()
results = {}
for page in pages:
    result = fingerprinter.from_html(page["html"], url=page["url"])
    results[page["id"]] = [result.fingerprint, result.wildcard, result.sketch and result.sketch.hex()]
json.dump(results, sys.stdout)
"""


def corpus_pages_one_host_per_site() -> list[dict[str, str]]:
    """The dev corpus, each site on a host of its own as on the web (``corpus/hosts.py``)."""
    sys.path.insert(0, str(CORPUS.parent))
    try:
        import hosts
    finally:
        sys.path.pop(0)
    with gzip.open(CORPUS / "pages.jsonl.gz", "rt", encoding="utf-8") as lines:
        pages = [json.loads(line) for line in lines]
    return [{"id": page["id"], "url": hosts.host_url(page["url"]), "html": page["html"]} for page in pages]


@needs_corpus
@pytest.mark.slow
def test_the_dev_corpus_in_two_orders_and_two_processes_gives_the_same_fingerprints(tmp_path: Path) -> None:
    pages = corpus_pages_one_host_per_site()
    fingerprinter = Fingerprinter()
    here = {}
    for page in pages:
        result = fingerprinter.from_html(page["html"], url=page["url"])
        here[page["id"]] = [result.fingerprint, result.wildcard, result.sketch and result.sketch.hex()]

    reversed_file = tmp_path / "reversed.json"
    reversed_file.write_text(json.dumps(pages[::-1]))
    child = subprocess.run([sys.executable, "-c", _CHILD, str(reversed_file)],
                           capture_output=True, text=True, check=True, timeout=600)
    there = json.loads(child.stdout)
    assert len(here) == len(pages) > 2000
    assert sum(value[0] is not None for value in here.values()) > 2000
    assert there == here
