from __future__ import annotations

import dataclasses
import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DEMO_SITE

from scrapy_simhash import Fingerprinter, FingerprintOptions, __version__, main_text
from scrapy_simhash.index.base import DEFAULT_MIN_SIMILARITY
from scrapy_simhash.cli import main
from scrapy_simhash.core.fingerprint import from_hex, hamming_distance
from scrapy_simhash.index import open_index

ARTICLE = " ".join(
    f"Sentence number {i} explains how the crawler schedules request {i * 7} "
    f"and why the downloader keeps {i % 5} slots busy."
    for i in range(40)
)


def page(body: str, title: str = "Docs") -> str:
    return f"<html><head><title>{title}</title></head><body><main><p>{body}</p></main></body></html>"


@pytest.fixture
def pages(tmp_path: Path) -> dict[str, Path]:
    files = {
        "original": page(ARTICLE),
        "copy": page(ARTICLE + " One more closing remark."),
        "other": page(" ".join(f"Completely different text {i} about cooking pasta {i * 3}." for i in range(60))),
        "short": page("Too short."),
    }
    paths = {}
    for name, html in files.items():
        paths[name] = tmp_path / f"{name}.html"
        paths[name].write_text(html, encoding="utf-8")
    return paths


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main([*argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_fingerprint_files(pages: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "fingerprint", str(pages["original"]), str(pages["short"]))
    first, second = out.splitlines()
    assert status == 0
    assert len(first.split()[0]) == 16 and first.endswith("original.html")
    assert second.startswith("- (skipped: too_short)")


def test_fingerprint_missing_file_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "fingerprint", str(tmp_path / "nope.html"))
    assert status == 1 and out == "" and "nope.html" in err


def test_compare_near_duplicates(pages: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "compare", str(pages["original"]), str(pages["copy"]))
    lines = out.splitlines()
    distance = hamming_distance(from_hex(lines[0].split()[0]), from_hex(lines[1].split()[0]))
    assert status == 0
    assert lines[2].startswith(f"distance: {distance}, ") and lines[2].endswith(f"(near-duplicates at k=3, min similarity {DEFAULT_MIN_SIMILARITY})")


def test_compare_counts_bits_outside_the_wildcard_as_a_crawl_does(capsys: pytest.CaptureFixture[str]) -> None:
    # The demo's print version: 4 bits from its article in all, dropped by the demo crawl at k=3.
    site = Path(__file__).resolve().parents[1] / "example_project" / "demo_site"
    original, printed = site / "articles" / "tide-pools.html", site / "_variants" / "tide-pools-print.html"
    _, out, _ = run_cli(capsys, "compare", str(original), str(printed), "-k", "3")
    assert out.splitlines()[2].endswith(f"(near-duplicates at k=3, min similarity {DEFAULT_MIN_SIMILARITY})")


def test_compare_distinct(pages: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_cli(capsys, "compare", str(pages["original"]), str(pages["other"]), "-k", "3")
    assert out.splitlines()[2].endswith(f"(distinct at k=3, min similarity {DEFAULT_MIN_SIMILARITY})")


def write_jsonl(path: Path, lines: list[str]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        stream.write("\n".join(lines) + "\n")


def test_dedup_streams_one_line_per_record_in_order(
    pages: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = [{"id": name, "html": path.read_text()} for name, path in pages.items()]
    source = tmp_path / "pages.jsonl.gz"
    lines = [json.dumps(r) for r in records]
    write_jsonl(source, lines[:2] + ["{not json"] + lines[2:])
    output = tmp_path / "out.jsonl"
    status, _, err = run_cli(capsys, "dedup", str(source), "--output", str(output), "--quiet")
    results = [json.loads(line) for line in output.read_text().splitlines()]
    assert status == 0
    assert "pages.jsonl.gz:3: skipped, not JSON" in err
    assert [r["id"] for r in results] == ["original", "copy", "other", "short"]
    assert results[0]["duplicate_of"] is None
    assert results[1]["duplicate_of"] == "original" and 0 <= results[1]["distance"] <= 3
    assert results[2]["duplicate_of"] is None
    assert results[3] == {"id": "short", "fingerprint": None, "duplicate_of": None, "distance": None,
                          "similarity": None, "unchanged": False, "changed": False,
                          "skip_reason": "too_short"}


def test_dedup_run_again_into_its_index_finds_every_kept_page_unchanged(
    pages: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "pages.jsonl.gz"
    write_jsonl(source, [json.dumps({"id": name, "html": path.read_text()}) for name, path in pages.items()])
    store = str(tmp_path / "store")
    runs = []
    for _ in range(2):
        status, out, err = run_cli(capsys, "dedup", str(source), "--index", store)
        assert status == 0, err
        runs.append([json.loads(line) for line in out.splitlines()])
    first, again = runs
    kept = [r["id"] for r in first if r["fingerprint"] and r["duplicate_of"] is None]
    assert kept == ["original", "other"]
    assert [r["id"] for r in again if r["unchanged"]] == kept
    # what was a near-duplicate stays one, of the same page
    assert [(r["id"], r["duplicate_of"]) for r in again if r["duplicate_of"]] == [("copy", "original")]
    assert "0 near-duplicates, 0 unchanged" not in err and "1 near-duplicates, 2 unchanged" in err
    with open_index(store) as index:
        assert len(index) == 2

    # "original" rewritten: its entry replaced, so "copy" is new; "other" rewritten as
    # the old "original": a near-duplicate of "copy" now, and its old entry goes
    changed = {"original": page(" ".join(f"Garden notes {i}: water the tomatoes {i * 7} times." for i in range(60))),
               "copy": pages["copy"].read_text(), "other": pages["original"].read_text()}
    write_jsonl(source, [json.dumps({"id": name, "html": html}) for name, html in changed.items()])
    _, out, err = run_cli(capsys, "dedup", str(source), "--index", store)
    third = {r["id"]: r for r in map(json.loads, out.splitlines())}
    assert [name for name, r in third.items() if r["changed"]] == ["original", "other"]
    assert third["original"]["duplicate_of"] is third["copy"]["duplicate_of"] is None
    assert third["other"]["duplicate_of"] == "copy" and "1 near-duplicates, 0 unchanged, 2 changed" in err
    with open_index(store) as index:
        assert sorted(key for _, key in index.items()) == ["copy", "original"]


def test_fingerprint_jsonl_text_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "texts.jsonl"
    source.write_text(json.dumps({"key": 7, "body": ARTICLE}) + "\n" + json.dumps({"key": 8}) + "\n")
    _, out, _ = run_cli(capsys, "fingerprint", "--jsonl", str(source), "--id-field", "key",
                        "--text-field", "body")
    first, second = (json.loads(line) for line in out.splitlines())
    # ids come back as strings, as dedup writes them (and names them in duplicate_of)
    assert first["id"] == "7" and len(first["fingerprint"]) == 16
    assert second == {"id": "8", "fingerprint": None, "skip_reason": "empty"}


def test_hash_key_changes_fingerprints(pages: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _, plain, _ = run_cli(capsys, "fingerprint", str(pages["original"]))
    _, keyed, _ = run_cli(capsys, "fingerprint", "--hash-key", "s3cret", str(pages["original"]))
    assert plain != keyed


def test_module_entry_point(pages: dict[str, Path]) -> None:
    done = subprocess.run([sys.executable, "-m", "scrapy_simhash", "compare",
                           str(pages["original"]), str(pages["copy"])],
                          capture_output=True, text=True, check=True)
    assert "near-duplicates at k=3" in done.stdout


def test_version_and_the_help_of_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"scrapy-simhash {__version__}"
    for command in ("fingerprint", "text", "compare", "dedup", "inspect", "export", "import", "evaluate"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        usage, _, description = capsys.readouterr().out.partition("\n\n")
        assert usage.startswith(f"usage: scrapy-simhash {command}")
        assert not description.startswith(("positional arguments", "options")), command


def test_fingerprint_without_pages_prints_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    """A command-line error prints the usage and exits with status 2 (README, "Command line")."""
    with pytest.raises(SystemExit) as done:
        main(["fingerprint"])
    error = capsys.readouterr().err
    assert done.value.code == 2
    assert error.startswith("usage: scrapy-simhash fingerprint") and "give HTML files or --jsonl FILE" in error


def test_evaluate_on_files_with_nothing_to_score_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    status, out, err = run_cli(capsys, "evaluate", "--pages", str(empty), "--pairs", str(empty))
    assert status == 1 and out == "" and "no page could be fingerprinted" in err


def test_compare_of_a_missing_file_is_an_error_in_the_data(pages: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    # README: exit 1 and "scrapy-simhash: <command>: <message>" (it was 2, the command not named)
    status, _, err = run_cli(capsys, "compare", "nope.html", str(pages["original"]))
    assert status == 1 and err == "scrapy-simhash: compare: nope.html: No such file or directory\n"


def test_compare_says_which_page_it_could_not_fingerprint(
    pages: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run_cli(capsys, "compare", str(pages["original"]), str(pages["short"]))
    assert status == 1 and "distance: -" in out
    assert f"compare: {pages['short']}: not fingerprinted (too_short)" in err
    status, out, _ = run_cli(capsys, "compare", str(pages["original"]), str(pages["copy"]))
    assert status == 0 and re.search(r"; similarity 0\.9\d (exact|estimated) \(near-duplicates", out.splitlines()[2])


def test_records_without_an_id_are_warned_of_once(
    pages: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "no-ids.jsonl"
    record = json.dumps({"html": pages["original"].read_text()})
    broken = '{"id": "x", "html": "a\tb"}'  # a raw tab inside a JSON string
    source.write_text("\n".join([record] * 5 + [broken]) + "\n")
    status, out, err = run_cli(capsys, "fingerprint", "--jsonl", str(source), "--quiet")
    assert status == 0 and [json.loads(line)["id"] for line in out.splitlines()][:5] == ["1", "2", "3", "4", "5"]
    assert err.count("no 'id' field") == 1
    assert "not JSON (Invalid control character at: column" in err


def test_dedup_reports_bad_input_and_bad_options_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run_cli(capsys, "dedup", str(tmp_path / "nope.jsonl"))
    assert status == 1 and "nope.jsonl: No such file or directory" in err
    (tmp_path / "bad.jsonl.gz").write_bytes(b"not gzip")
    status, _, err = run_cli(capsys, "dedup", str(tmp_path / "bad.jsonl.gz"))
    assert status == 1 and "bad.jsonl.gz: Not a gzipped file" in err
    (tmp_path / "ok.jsonl").write_text("{}\n")
    status, _, err = run_cli(capsys, "dedup", str(tmp_path / "ok.jsonl"), "-k", "40")
    assert status == 1 and "max_distance" in err


def test_dedup_of_a_missing_input_creates_no_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli(capsys, "dedup", str(tmp_path / "missing.jsonl"), "--index", str(tmp_path / "index"))
    assert status == 1 and "missing.jsonl: No such file or directory" in err
    assert not (tmp_path / "index").exists()


def test_dedup_of_a_directory_leaves_its_output_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "out.jsonl").write_text('{"id": "kept"}\n')
    status, _, err = run_cli(capsys, "dedup", str(tmp_path), "-o", str(tmp_path / "out.jsonl"))
    assert status == 1 and "Is a directory" in err
    assert (tmp_path / "out.jsonl").read_text() == '{"id": "kept"}\n'


def test_dedup_refuses_to_write_over_its_input(
    pages: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "pages.jsonl"
    source.write_text(json.dumps({"id": "a", "html": pages["original"].read_text()}) + "\n")
    before = source.read_bytes()
    (tmp_path / "link.jsonl").symlink_to(source)  # the same file by another name
    for output in (source, tmp_path / "link.jsonl", tmp_path / "." / "pages.jsonl"):
        status, _, err = run_cli(capsys, "dedup", str(source), "-o", str(output), "--index", str(tmp_path / "index"))
        assert status == 1 and f"{output}: the output is the input file" in err
    assert source.read_bytes() == before and not (tmp_path / "index").exists()


def test_wildcard_bits_reach_the_fingerprinter(
    pages: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "pages.jsonl"
    source.write_text(json.dumps({"id": "a", "html": pages["original"].read_text()}) + "\n")
    status, _, err = run_cli(capsys, "dedup", str(source), "--quiet", "--wildcard-bits", "40")
    assert status == 1 and "wildcard_bits must be between 0 and 32" in err
    status, out, _ = run_cli(capsys, "dedup", str(source), "--quiet", "--wildcard-bits", "0")
    assert status == 0 and json.loads(out)["duplicate_of"] is None


def test_a_line_that_is_not_utf8_is_skipped_not_fatal(
    pages: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    html = pages["original"].read_text()
    source = tmp_path / "pages.jsonl"
    with source.open("wb") as lines:
        lines.write(json.dumps({"id": "a", "html": html}).encode() + b"\n")
        lines.write(b'{"id": "latin-1", "html": "caf\xe9"}\n')
        lines.write(json.dumps({"id": "c", "html": html}).encode() + b"\n")
    status, out, err = run_cli(capsys, "dedup", str(source), "--quiet")
    assert status == 0
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["a", "c"]
    assert f"{source}:2: skipped, not UTF-8" in err


def test_an_id_with_a_lone_surrogate_is_written_as_the_escape_it_was_read_from(
    pages: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "\ud800" is valid JSON and a valid str, but has no UTF-8: it stopped the run part-way.
    source = tmp_path / "pages.jsonl"
    source.write_text(json.dumps({"id": "a\ud800b", "html": pages["original"].read_text()}) + "\n")
    output = tmp_path / "out.jsonl"
    status, _, err = run_cli(capsys, "dedup", str(source), "-o", str(output), "--index", str(tmp_path / "index"), "-q")
    assert status == 0, err
    assert '"id": "a\\ud800b"' in output.read_text(encoding="utf-8")
    assert json.loads(output.read_text(encoding="utf-8"))["id"] == "a\ud800b"
    status, out, err = run_cli(capsys, "fingerprint", "--jsonl", str(source), "-q")
    assert status == 0, err
    assert json.loads(out)["id"] == "a\ud800b"


def test_a_truncated_gzip_is_named_after_the_lines_it_held(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "pages.jsonl.gz"
    lines = "".join(json.dumps({"id": str(i), "text": f"page number {i} " * 20}) + "\n" for i in range(2000))
    compressed = gzip.compress(lines.encode())
    source.write_bytes(compressed[: len(compressed) // 2])
    status, out, err = run_cli(capsys, "dedup", str(source), "--text-field", "text", "--quiet")
    assert status == 1 and str(source) in err
    assert out.count("\n") > 0  # the records before the cut were written


@pytest.mark.parametrize("command", ["fingerprint", "compare", "dedup", "evaluate"])
def test_every_fingerprint_setting_is_an_option_with_its_default(command: str) -> None:
    from scrapy_simhash.cli import build_parser
    from scrapy_simhash.cli._options import options_from_args

    required = {"compare": ["a", "b"], "dedup": ["p"], "evaluate": ["--pages", "p", "--pairs", "q"]}
    args = build_parser().parse_args([command, *required.get(command, [])])
    for field in dataclasses.fields(FingerprintOptions):
        assert hasattr(args, field.name), f"{command} has no --{field.name.replace('_', '-')}"
    assert options_from_args(args) == FingerprintOptions()
    given = build_parser().parse_args([command, *required.get(command, []), "--shingle-size", "2",
                                       "--no-main-content", "--weighting", "log", "--max-weight", "4"])
    assert options_from_args(given) == FingerprintOptions(shingle_size=2, main_content=False, weighting="log",
                                                          max_weight=4.0)


def test_dedup_into_an_index_uses_the_options_it_was_made_with(
    pages: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An index a crawl made with SIMHASH_SHINGLE_SIZE = 2 and a hash key: dedup takes its
    options, asks for the key, and refuses an option that conflicts, naming it."""
    crawl_options = FingerprintOptions(shingle_size=2, segmenter="jieba", hash_key=b"s3cret")
    store = str(tmp_path / "store")
    open_index(store, signature=crawl_options.signature()).close()
    source = tmp_path / "pages.jsonl"
    source.write_text(json.dumps({"id": "a", "html": pages["original"].read_text()}) + "\n")

    status, _, err = run_cli(capsys, "dedup", str(source), "--index", store, "-q")
    assert status == 1 and "made with a hash key: give it with --hash-key" in err
    status, out, err = run_cli(capsys, "dedup", str(source), "--index", store, "-q", "--hash-key", "s3cret")
    assert status == 0, err
    expected = Fingerprinter(dataclasses.replace(crawl_options, segmenter="auto")).from_html(
        pages["original"].read_text()).fingerprint
    assert json.loads(out)["fingerprint"] == f"{expected:016x}"
    for option, message in [(["--shingle-size", "3"], "--shingle-size 3 conflicts with the index, made with "
                                                        "shingle_size=2"),
                            (["--segmenter", "char"], "--segmenter char conflicts"),
                            (["--hash-key", "other"], "--hash-key (a key) conflicts with the index, made with "
                                                      "hash_key=(another key)")]:
        status, _, err = run_cli(capsys, "dedup", str(source), "--index", store, "-q", "--hash-key", "s3cret",
                                 *option)
        assert status == 1 and message in err, err
    status, _, err = run_cli(capsys, "dedup", str(source), "--index", store, "-q", "--hash-key", "s3cret",
                             "--shingle-size", "2", "--segmenter", "rjieba")  # the same options, given: accepted
    assert status == 0, err


def test_text_prints_the_main_text_as_fingerprinted(pages: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "text", str(pages["original"]))
    assert status == 0 and out.splitlines() == main_text(pages["original"].read_bytes()).splitlines()
    assert out.startswith("sentence number 0 explains") and out == out.lower()
    article = str(DEMO_SITE / "articles" / "tide-pools.html")  # in its site's template
    _, out, _ = run_cli(capsys, "text", article)
    status, verbose, _ = run_cli(capsys, "text", "--verbose", article)
    kept = [line[2:] for line in verbose.splitlines() if line.startswith("+ ")]
    left_out = [line for line in verbose.splitlines() if line.startswith("- ")]
    assert status == 0 and kept == out.splitlines() and len(kept) >= 5
    assert '- home about newsletter mirrors  [boilerplate: inside <header class="site">]' in left_out
    assert "- popular this week  [boilerplate: inside <aside class=\"sidebar\">]" in left_out
    assert all(line.endswith("]") for line in left_out)
    status, _, err = run_cli(capsys, "text", str(pages["original"]), str(pages["original"].parent / "nope.html"))
    assert status == 1 and "nope.html: No such file or directory" in err


def test_compare_diff_shows_where_the_main_texts_differ(
    pages: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run_cli(capsys, "compare", "--diff", str(pages["original"]), str(pages["other"]))
    removed = [line[1:] for line in out.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in out.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert status == 0 and removed and added
    assert set(removed) <= set(main_text(pages["original"].read_bytes()).splitlines())
    assert set(added) <= set(main_text(pages["other"].read_bytes()).splitlines())
    status, out, _ = run_cli(capsys, "compare", "--diff", str(pages["original"]), str(pages["original"]))
    assert "(same main text)" in out


def test_evaluate_shows_its_progress_on_stderr(pages: dict[str, Path], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    source, pairs = tmp_path / "pages.jsonl", tmp_path / "pairs.jsonl"
    source.write_text("".join(json.dumps({"id": name, "lang": "en", "html": path.read_text()}) + "\n"
                              for name, path in pages.items()))
    pairs.write_text(json.dumps({"id_a": "original", "id_b": "copy", "label": "dup", "kind": "edit"}) + "\n")
    status, out, err = run_cli(capsys, "evaluate", "--pages", str(source), "--pairs", str(pairs), "-k", "3")
    assert status == 0 and "crawl order, k=3" in out
    assert "evaluate: fingerprinting: 4 records, 1 skipped" in err


def test_dedup_reads_a_named_pipe_whole(pages: dict[str, Path], tmp_path: Path) -> None:
    # Its input check must not open the pipe: that would end the writer's stream before dedup reads it.
    fifo = tmp_path / "pages.fifo"
    os.mkfifo(fifo)
    lines = "".join(json.dumps({"id": name, "html": pages[name].read_text()}) + "\n" for name in ("original", "copy"))
    writer = subprocess.Popen([sys.executable, "-c", f"open({str(fifo)!r}, 'w').write({lines!r})"])
    run = subprocess.run([sys.executable, "-m", "scrapy_simhash", "dedup", str(fifo), "-o", "-"],
                         capture_output=True, text=True, timeout=120)
    assert writer.wait(timeout=60) == 0
    assert run.returncode == 0, run.stderr
    assert [json.loads(line)["id"] for line in run.stdout.splitlines()] == ["original", "copy"]
