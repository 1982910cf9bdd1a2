"""The README's Python API snippet runs as written (a newcomer copies it first)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import DEMO_SITE, REPO


def readme_block(section: str) -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    part = text[text.index(f"## {section}"):]
    found = re.search(r"```python\n(.*?)```", part, re.S)
    assert found is not None
    return found.group(1)


def test_the_python_api_snippet_runs_and_finds_the_copy(tmp_path: Path) -> None:
    pages = tmp_path / "pages"
    pages.mkdir()
    for page in (DEMO_SITE / "articles").glob("*.html"):
        shutil.copy(page, pages / page.name)
    shutil.copy(DEMO_SITE / "mirror" / "coffee-roasting.html", pages / "zz-mirror.html")
    done = subprocess.run([sys.executable, "-c", readme_block("Python API")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"{(pages / 'zz-mirror.html').as_uri()} repeats {(pages / 'coffee-roasting.html').as_uri()} "
        "at distance 0 similarity 1.0"
    ]
