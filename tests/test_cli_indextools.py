from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import redis

from redis_server import redis_url, shared_redis_server  # noqa: F401  (fixtures)

from scrapy_simhash.cli import main
from scrapy_simhash.core.fingerprint import to_hex
from scrapy_simhash.index import open_index


def stored_pairs(count: int = 300) -> list[tuple[int, str]]:
    rng = random.Random(3)
    pairs = []
    for i in range(count):
        fingerprint = rng.getrandbits(64)
        pairs.append((fingerprint, f"https://site/{i}"))
        if i % 10 == 0:  # a near-duplicate two bits away
            pairs.append((fingerprint ^ 0b11, f"https://site/{i}/copy"))
    return pairs


@pytest.fixture
def disk_store(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    with open_index(path, namespace="books") as index:
        index.add_many(stored_pairs())
    return path


def test_inspect_reports_size_design_buckets_and_distances(disk_store: Path, capsys) -> None:
    assert main(["inspect", str(disk_store), "--namespace", "books", "--json", "--sample", "100000"]) == 0
    report = json.loads(capsys.readouterr().out)
    pairs = stored_pairs()
    copies = sum(key.endswith("/copy") for _, key in pairs)
    assert report["size"] == len(pairs) and report["backend"] == "disk"
    assert report["design"]["tables"] == 4
    assert report["buckets"]["rows"] == len(pairs)
    # each copy and its original are each other's nearest neighbour, 2 bits apart
    assert report["nearest_neighbour_distances"] == {"2": 2 * copies, "none": len(pairs) - 2 * copies}


@pytest.mark.parametrize("sample", ["-5", "many"])
def test_inspect_sample_is_a_count(sample: str, disk_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_status:  # not islice's own message, from inside the run
        main(["inspect", str(disk_store), "--namespace", "books", "--sample", sample])
    assert exit_status.value.code == 2
    assert f"argument --sample: a number of entries, 0 or more, not '{sample}'" in capsys.readouterr().err


def test_export_then_import_moves_a_disk_store_into_redis(disk_store: Path, redis_url: str, tmp_path: Path) -> None:
    exported = tmp_path / "out.jsonl.gz"
    assert main(["export", str(disk_store), str(exported), "--namespace", "books"]) == 0
    assert main(["import", str(exported), redis_url, "--namespace", "books"]) == 0
    with open_index(redis_url, namespace="books") as index:
        assert sorted(index.items()) == sorted(stored_pairs())
    assert main(["inspect", redis_url, "--namespace", "books"]) == 0


def test_import_skips_bad_lines_and_near_duplicates(tmp_path: Path, capsys) -> None:
    lines = [
        json.dumps({"fingerprint": to_hex(0xF0), "key": "a"}),
        "not json",
        json.dumps({"fingerprint": "xyz", "key": "b"}),
        json.dumps({"fingerprint": to_hex(0xF1), "key": "near a"}),
        json.dumps({"fingerprint": to_hex(2**64 - 1), "key": "c"}),
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines) + "\n")
    assert main(["import", str(source), str(tmp_path / "store"), "--skip-near-duplicates"]) == 0
    err = capsys.readouterr().err
    assert "in.jsonl:2" in err and "in.jsonl:3" in err and "skipped 1 near-duplicates" in err
    with open_index(tmp_path / "store") as index:
        assert sorted(index.items()) == [(0xF0, "a"), (2**64 - 1, "c")]


def test_a_key_with_a_lone_surrogate_goes_through_export_and_import(tmp_path: Path) -> None:
    key = "https://site/\udcff"  # a key import accepts (JSON "\udcff") and a store keeps
    with open_index(tmp_path / "source") as index:
        index.add_many([(0xF0, key), (0xF0F0, "plain")])
    exported = tmp_path / "out.jsonl"
    assert main(["export", str(tmp_path / "source"), str(exported)]) == 0
    assert main(["import", str(exported), str(tmp_path / "copy")]) == 0
    with open_index(tmp_path / "copy") as index:
        assert sorted(index.items()) == [(0xF0, key), (0xF0F0, "plain")]


def test_import_reports_a_key_or_fingerprint_that_is_not_a_string(tmp_path: Path, capsys) -> None:
    lines = [
        {"fingerprint": to_hex(0xF0), "key": None},
        {"fingerprint": to_hex(0xF0), "key": 42},
        {"fingerprint": to_hex(0xF0), "key": ["list"]},
        {"fingerprint": 14, "key": "number"},  # it was read as hex 0x14
        {"fingerprint": to_hex(0xF0F0), "key": "good"},
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["import", str(source), str(tmp_path / "store")]) == 0
    err = capsys.readouterr().err
    assert all(f"in.jsonl:{number}: skipped" in err for number in range(1, 5)) and "in.jsonl:5" not in err
    assert "'key' is a string, not NoneType" in err and "'fingerprint' is a string, not int" in err
    with open_index(tmp_path / "store") as index:
        assert list(index.items()) == [(0xF0F0, "good")]


@pytest.mark.parametrize("command", ["inspect", "export"])
def test_reading_a_missing_index_fails_without_creating_one(command: str, tmp_path: Path, capsys) -> None:
    missing = tmp_path / "typo"
    assert main([command, str(missing), *(["out.jsonl"] if command == "export" else [])]) == 1
    assert "typo: no index there" in capsys.readouterr().err
    assert not missing.exists()


@pytest.mark.parametrize("command", ["inspect", "export"])
def test_reading_a_missing_redis_namespace_fails_without_creating_it(
    command: str, redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = [str(tmp_path / "out.jsonl")] if command == "export" else []
    assert main([command, redis_url, *output, "--namespace", "typo"]) == 1
    assert "no index in namespace 'typo'" in capsys.readouterr().err
    client = redis.Redis.from_url(redis_url)
    assert not client.keys("simhash:typo:*")
    client.close()


def test_import_of_a_missing_file_fails_before_creating_the_index(tmp_path: Path, capsys) -> None:
    assert main(["import", str(tmp_path / "missing.jsonl"), str(tmp_path / "store")]) == 1
    assert "missing.jsonl: No such file or directory" in capsys.readouterr().err
    assert not (tmp_path / "store").exists()


def test_a_corrupt_index_is_reported_without_a_traceback(tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    store.mkdir()
    (store / "fingerprints.log").write_bytes(b"not an index")
    assert main(["inspect", str(store)]) == 1
    assert "is not a scrapy-simhash index" in capsys.readouterr().err


def test_a_redis_namespace_with_a_ttl_is_read_with_ttl(redis_url: str, tmp_path: Path, capsys) -> None:
    with open_index(redis_url, namespace="expiring", ttl=3600) as index:
        index.add(0xF0, "a")
    assert main(["inspect", redis_url, "--namespace", "expiring"]) == 1
    assert "--ttl on the command line" in capsys.readouterr().err
    exported = tmp_path / "out.jsonl"
    assert main(["export", redis_url, str(exported), "--namespace", "expiring", "--ttl", "3600"]) == 0
    assert json.loads(exported.read_text()) == {"fingerprint": to_hex(0xF0), "key": "a"}


@pytest.mark.parametrize("ttl", ["inf", "1e30", "nan", "-1", "0.5", "abc"])
def test_a_bad_ttl_is_a_command_line_error_and_writes_nothing(
    ttl: str, redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"fingerprint": to_hex(0xF0), "key": "a"}) + "\n")
    with pytest.raises(SystemExit) as exit_status:
        main(["import", str(source), redis_url, "--namespace", "badttl", "--ttl", ttl])
    assert exit_status.value.code == 2 and "argument --ttl: " in capsys.readouterr().err
    client = redis.Redis.from_url(redis_url)
    assert not client.keys("simhash:badttl:*")
    client.close()


def test_a_ttl_for_a_disk_store_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"fingerprint": to_hex(0xF0), "key": "a"}) + "\n")
    assert main(["import", str(source), str(tmp_path / "store"), "--ttl", "60"]) == 1
    assert "--ttl is for a redis:// index" in capsys.readouterr().err
    assert not (tmp_path / "store").exists()


def test_what_redis_refuses_is_one_line_not_a_traceback(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    client = redis.Redis.from_url(redis_url)
    client.set("simhash:foreign:meta", "not ours")  # WRONGTYPE to our scripts
    assert main(["inspect", redis_url, "--namespace", "foreign"]) == 1
    assert capsys.readouterr().err.startswith("scrapy-simhash: inspect: WRONGTYPE")
    client.delete("simhash:foreign:meta")
    client.close()
    assert main(["inspect", redis_url.rpartition("/")[0] + "/99999"]) == 1  # no such database
    assert capsys.readouterr().err == "scrapy-simhash: inspect: DB index is out of range\n"
    assert main(["inspect", redis_url.rpartition("/")[0] + "/abc"]) == 1
    assert "a Redis URL's path is its database number" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["import", "inspect", "export"])
def test_memory_names_the_in_memory_index_as_everywhere_and_is_refused(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    with open_index(tmp_path / "memory") as index:  # a directory of that name: ./memory
        index.add(0xF0, "a")
    (tmp_path / "in.jsonl").write_text(json.dumps({"fingerprint": to_hex(0xF1), "key": "b"}) + "\n")
    argv = {"import": ["in.jsonl", "memory"], "inspect": ["memory"], "export": ["memory", "out.jsonl"]}[command]
    assert main([command, *argv]) == 1  # it imported into a throwaway index, or read ./memory
    assert "'memory' is a fresh in-memory index" in capsys.readouterr().err
    assert main([command, *(["./memory" if arg == "memory" else arg for arg in argv])]) == 0
    with open_index(tmp_path / "memory") as index:
        assert len(index) == (2 if command == "import" else 1)


def test_inspect_reads_a_store_a_crawl_holds(disk_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with open_index(disk_store, namespace="books"):  # the crawl's lock: inspect needs none
        assert main(["inspect", str(disk_store), "--namespace", "books", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["size"] == len(stored_pairs())


def test_inspect_of_a_directory_without_an_index_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(tmp_path)]) == 1
    assert "holds no scrapy-simhash index" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_export_and_import_carry_the_fingerprint_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    signature, other = "simhash-v2;shingle_size=2", "simhash-v2;shingle_size=3"
    with open_index(tmp_path / "source", signature=signature) as index:
        index.add_many(stored_pairs(20))
    export = tmp_path / "export.jsonl"
    assert main(["export", str(tmp_path / "source"), str(export)]) == 0
    assert json.loads(export.read_text().splitlines()[0]) == {"signature": signature}

    assert main(["import", str(export), str(tmp_path / "copy")]) == 0
    with open_index(tmp_path / "copy", signature=signature) as copy:  # same options: accepted
        assert sorted(copy.items()) == sorted(stored_pairs(20))
    with open_index(tmp_path / "elsewhere", signature=other):
        pass
    capsys.readouterr()
    assert main(["import", str(export), str(tmp_path / "elsewhere")]) == 1  # other options: refused
    error = capsys.readouterr().err
    assert "made otherwise" in error and "shingle_size" in error


def sketched_entries(count: int = 200) -> list[tuple[int, str, bytes | None]]:
    """Random entries, every fourth without a sketch."""
    rng = random.Random(4)
    return [(rng.getrandbits(64), f"https://site/{i}", None if i % 4 == 0 else rng.randbytes(32)) for i in range(count)]


def test_export_then_import_keeps_the_sketches(tmp_path: Path) -> None:
    entries = sketched_entries()
    with open_index(tmp_path / "source", namespace="books") as index:
        index.add_entries(entries)
    exported = tmp_path / "out.jsonl"
    assert main(["export", str(tmp_path / "source"), str(exported), "--namespace", "books"]) == 0
    lines = {line["key"]: line for line in map(json.loads, exported.read_text().splitlines())}
    for fingerprint, key, sketch in entries:  # hex, and no field at all without a sketch
        expected = {"fingerprint": to_hex(fingerprint), "key": key} | ({"sketch": sketch.hex()} if sketch else {})
        assert lines[key] == expected
    assert main(["import", str(exported), str(tmp_path / "copy")]) == 0
    with open_index(tmp_path / "copy") as copy:
        assert sorted(copy.entries(), key=lambda e: e[1]) == sorted(entries, key=lambda e: e[1])


def test_import_skipping_near_duplicates_confirms_with_the_sketches(tmp_path: Path, capsys) -> None:
    sketch = bytes(range(32))
    close = bytes([sketch[0] ^ 0b111]) + sketch[1:]  # 3 bits apart
    far = bytes(b ^ 0xFF for b in sketch)  # 256 bits apart
    lines = [
        {"fingerprint": to_hex(0xF0), "key": "a", "sketch": sketch.hex()},
        {"fingerprint": to_hex(0xF1), "key": "other page", "sketch": far.hex()},  # within k, sketches disagree
        {"fingerprint": to_hex(0xF3), "key": "copy of a", "sketch": close.hex()},
        {"fingerprint": to_hex(0xF7), "key": "no sketch", "sketch": None},  # matches on the fingerprint
        {"fingerprint": to_hex(0xF00), "key": "bad", "sketch": "abcd"},
        {"fingerprint": to_hex(0xF01), "key": "bad type", "sketch": 12},
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["import", str(source), str(tmp_path / "store"), "--skip-near-duplicates"]) == 0
    err = capsys.readouterr().err
    assert "in.jsonl:5" in err and "in.jsonl:6" in err and "skipped 2 near-duplicates" in err
    with open_index(tmp_path / "store") as index:
        assert sorted(index.entries()) == [(0xF0, "a", sketch), (0xF1, "other page", far)]


def test_importing_an_export_twice_adds_nothing_the_second_time(disk_store: Path, tmp_path: Path, capsys) -> None:
    export = tmp_path / "export.jsonl"
    assert main(["export", str(disk_store), str(export), "--namespace", "books"]) == 0
    lines = export.read_text().splitlines()
    lines.append(lines[-1])  # one entry twice in the file, too
    export.write_text("\n".join(lines) + "\n")
    copy = str(tmp_path / "copy")
    capsys.readouterr()
    assert main(["import", str(export), copy]) == 0
    assert "1 already present" in capsys.readouterr().err
    assert main(["import", str(export), copy]) == 0
    entries = sum('"fingerprint"' in line for line in lines)
    assert f"imported 0 entries, {entries} already present" in capsys.readouterr().err
    with open_index(disk_store, namespace="books") as source, open_index(copy) as index:
        assert sorted(index.items()) == sorted(source.items())


def test_a_mistyped_redis_url_is_refused_without_showing_its_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in (["inspect"], ["inspect", "--ttl", "5"]):
        assert main([*command, "redis:/user:s3cret@127.0.0.1:6379"]) == 1
        err = capsys.readouterr().err
        assert "looks like a Redis URL" in err and "s3cret" not in err
