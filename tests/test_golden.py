"""Golden fingerprints: a change to what a page's fingerprint is must bump ALGORITHM_VERSION.

Stored indexes carry the version in their signature and refuse another one, so an
index never mixes fingerprints of two algorithms. ``tests/golden/make_golden.py``
writes the goldens and will not write new ones under an old version.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from scrapy_simhash import FingerprintOptions
from scrapy_simhash.core.fingerprinter import ALGORITHM_VERSION

sys.path.insert(0, str(Path(__file__).parent / "golden"))
import make_golden  # noqa: E402

GOLDEN = json.loads(make_golden.GOLDEN.read_text())


def test_the_golden_file_is_of_this_algorithm_version() -> None:
    assert GOLDEN["algorithm_version"] == ALGORITHM_VERSION, (
        "ALGORITHM_VERSION was bumped: run python tests/golden/make_golden.py"
    )


def test_fingerprints_are_the_golden_ones() -> None:
    rows = make_golden.fingerprints_of(make_golden.golden_pages())
    changed = [row["id"] for row, golden in zip(rows, GOLDEN["pages"]) if row != golden]
    assert not changed, (
        f"{len(changed)} golden fingerprints changed ({changed[:5]}...): bump ALGORITHM_VERSION in "
        "scrapy_simhash/core/options.py, then run python tests/golden/make_golden.py"
    )
    assert GOLDEN["versions"][str(ALGORITHM_VERSION)] == make_golden.digest(rows)


def test_each_version_has_fingerprints_of_its_own() -> None:
    digests = list(GOLDEN["versions"].values())
    assert len(set(digests)) == len(digests)


def test_the_signature_names_the_version() -> None:
    assert FingerprintOptions().signature().startswith(f"simhash-v{ALGORITHM_VERSION};")
    assert len(GOLDEN["pages"]) >= 20 and any(row["fingerprint"] for row in GOLDEN["pages"])
