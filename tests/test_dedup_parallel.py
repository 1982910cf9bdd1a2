"""dedup on many cores and on a Dask cluster: the same verdicts as one local pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import DEMO_SITE

from scrapy_simhash.cli import _parallel, main


@pytest.fixture
def pages_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The demo site's pages, copies and variants among them, twice over in shuffled order:
    more chunks than workers (chunks of 4 pages), so that order across chunks is tested."""
    monkeypatch.setattr(_parallel, "CHUNK_PAGES", 4)
    files = sorted(DEMO_SITE.rglob("*.html"))
    records = [{"id": f"{n}-{path.relative_to(DEMO_SITE)}", "html": path.read_text()}
               for n in range(2) for path in files[n::1]]
    records += [{"id": "text-only", "html": "<p>too short</p>"}]
    path = tmp_path / "pages.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records[::-1]))
    return path


def dedup(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, object]]:
    assert main(["dedup", *args, "-q"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_local_processes_give_the_verdicts_of_one_pass(pages_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    alone = dedup(capsys, str(pages_file))
    assert sum(row["duplicate_of"] is not None for row in alone) > 10
    assert dedup(capsys, str(pages_file), "--jobs", "2") == alone
    assert dedup(capsys, str(pages_file), "--jobs", "0") == alone


def test_a_dask_cluster_gives_the_verdicts_of_one_pass(pages_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    distributed = pytest.importorskip("distributed")
    alone = dedup(capsys, str(pages_file))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        assert dedup(capsys, str(pages_file), "--engine", "dask", "--scheduler", cluster.scheduler_address) == alone
    assert dedup(capsys, str(pages_file), "--engine", "dask", "--jobs", "2") == alone  # a cluster of its own


def test_bad_jobs_are_refused(pages_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dedup", str(pages_file), "--jobs", "-1"]) == 1
    assert "--jobs must be 0 (one per core) or more" in capsys.readouterr().err
