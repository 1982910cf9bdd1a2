"""SIMHASH_* settings: defaults, parsing, and one failing value per setting."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings

from scrapy_simhash.config import JOBDIR_INDEX_NAME, SimhashSettings, fingerprint_options
from scrapy_simhash.core.fingerprinter import FingerprintOptions


def parse(**values: Any) -> SimhashSettings:
    return SimhashSettings.from_settings(Settings(values))


def test_defaults() -> None:
    config = parse()
    assert config == SimhashSettings()
    assert config.fingerprint == FingerprintOptions()
    assert (config.max_distance, config.scope, config.action, config.index) == (3, "crawl", "drop", None)
    assert config.http_statuses == frozenset({200})


@pytest.mark.parametrize(
    ("name", "value", "attribute", "expected"),
    [
        ("SIMHASH_ENABLED", "False", "enabled", False),
        ("SIMHASH_MAX_DISTANCE", "5", "max_distance", 5),
        ("SIMHASH_MAX_DISTANCE", 0, "max_distance", 0),
        ("SIMHASH_MIN_SIMILARITY", "0.9", "min_similarity", 0.9),
        ("SIMHASH_MIN_SIMILARITY", 0, "min_similarity", 0.0),
        ("SIMHASH_INDEX", "redis://127.0.0.1:6379/0", "index", "redis://127.0.0.1:6379/0"),
        ("SIMHASH_SCOPE", "domain", "scope", "domain"),
        ("SIMHASH_ACTION", "mark", "action", "mark"),
        ("SIMHASH_ITEM_FIELDS", "title,body", "item_fields", ("title", "body")),
        ("SIMHASH_ITEM_FIELDS", ["body"], "item_fields", ("body",)),
        ("SIMHASH_HTTP_STATUSES", "200,203", "http_statuses", frozenset({200, 203})),
        ("SIMHASH_HTTP_STATUSES", [200, 404.0], "http_statuses", frozenset({200, 404})),
        ("SIMHASH_HTTP_STATUSES", " [200, 404]", "http_statuses", frozenset({200, 404})),  # -s NAME=[200,404]
        ("SIMHASH_DEBUG", True, "debug", True),
        ("SIMHASH_KEEP_UNCHANGED", True, "keep_unchanged", True),
        ("SIMHASH_FOLLOW_DROPPED", "1", "follow_dropped", "always"),
        ("SIMHASH_FOLLOW_DROPPED", True, "follow_dropped", "always"),
        ("SIMHASH_FOLLOW_DROPPED", "false", "follow_dropped", "never"),
        ("SIMHASH_FOLLOW_DROPPED", 0, "follow_dropped", "never"),
        ("SIMHASH_FOLLOW_DROPPED", "never", "follow_dropped", "never"),
        ("SIMHASH_FOLLOW_DROPPED", None, "follow_dropped", "siblings"),
        ("SIMHASH_EXPECTED_SIZE", "5000", "expected_size", 5000),
        ("SIMHASH_INDEX_RESET", "true", "index_reset", True),
        ("SIMHASH_TTL", "86400", "ttl", 86400.0),
        ("SIMHASH_FSYNC", "always", "fsync", 0.0),
        ("SIMHASH_FSYNC", True, "fsync", 0.0),
        ("SIMHASH_FSYNC", "True", "fsync", 0.0),  # -s SIMHASH_FSYNC=True
        ("SIMHASH_FSYNC", "false", "fsync", None),
        ("SIMHASH_FSYNC", 0, "fsync", 0.0),
        ("SIMHASH_FSYNC", "off", "fsync", None),
        ("SIMHASH_FSYNC", False, "fsync", None),
        ("SIMHASH_FSYNC", "2.5", "fsync", 2.5),
        ("SIMHASH_MAX_DISTANCE", 4.0, "max_distance", 4),
        ("SIMHASH_INDEX", "unix:///run/redis.sock", "index", "unix:///run/redis.sock"),
        ("SIMHASH_INDEX", "data/simhash:2026", "index", "data/simhash:2026"),
        ("SIMHASH_ON_INDEX_ERROR", "fail", "on_index_error", "fail"),
    ],
)
def test_valid_values(name: str, value: Any, attribute: str, expected: Any) -> None:
    assert getattr(parse(**{name: value}), attribute) == expected


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SIMHASH_ENABLED", "maybe"),
        ("SIMHASH_MAX_DISTANCE", "three"),
        ("SIMHASH_MAX_DISTANCE", -1),
        ("SIMHASH_MIN_SIMILARITY", 1.5),
        ("SIMHASH_MIN_SIMILARITY", "most"),
        ("SIMHASH_MIN_SIMILARITY", float("nan")),
        ("SIMHASH_MAX_DISTANCE", 9),
        ("SIMHASH_SCOPE", "planet"),
        ("SIMHASH_ACTION", "delete"),
        ("SIMHASH_ITEM_FIELDS", 42),
        ("SIMHASH_ITEM_FIELDS", ["body", 7]),
        ("SIMHASH_HTTP_STATUSES", "ok"),
        ("SIMHASH_HTTP_STATUSES", [99]),
        ("SIMHASH_HTTP_STATUSES", "[200, 404"),
        ("SIMHASH_HTTP_STATUSES", "[]"),
        ("SIMHASH_HTTP_STATUSES", [200.7]),
        ("SIMHASH_HTTP_STATUSES", [True]),
        ("SIMHASH_MAX_DISTANCE", True),
        ("SIMHASH_EXPECTED_SIZE", True),
        ("SIMHASH_DEBUG", "loud"),
        ("SIMHASH_KEEP_UNCHANGED", "sometimes"),
        ("SIMHASH_FOLLOW_DROPPED", "sometimes"),
        ("SIMHASH_FOLLOW_DROPPED", 2),
        ("SIMHASH_EXPECTED_SIZE", 0),
        ("SIMHASH_INDEX_RESET", "perhaps"),
        ("SIMHASH_TTL", "-5"),
        ("SIMHASH_TTL", "a day"),
        ("SIMHASH_FSYNC", "sometimes"),
        ("SIMHASH_FSYNC", -1),
        ("SIMHASH_TTL", "0.5"),
        ("SIMHASH_ON_INDEX_ERROR", "ignore"),
        ("SIMHASH_INDEX", "htps://redis.internal:6379/0"),
        ("SIMHASH_INDEX", "ftp://example.com/index"),
        ("SIMHASH_INDEX", "redis:/127.0.0.1:6379"),  # a slash missing: not a directory of that name
        ("SIMHASH_INDEX", "unix:/run/redis.sock"),
        ("SIMHASH_INDEX", "redis://127.0.0.1:port/0"),
        ("SIMHASH_INDEX", "   "),
        ("SIMHASH_INDEX", 5),
        ("SIMHASH_MAX_DISTANCE", 3.7),
        ("SIMHASH_TTL", "nan"),
        ("SIMHASH_TTL", float("inf")),
        ("SIMHASH_TTL", 2e9),  # past what Redis' 32-bit expiry times hold
        ("SIMHASH_INDEX", "redis://localhost:6379/abc"),  # redis-py would use database 0
        ("SIMHASH_EXPECTED_SIZE", 10**12),
        ("SIMHASH_HASH_KEY", 5),
        ("SIMHASH_HASH_KEY", "x" * 65),  # a BLAKE2b key: at most 64 bytes
        ("SIMHASH_MIN_TOKENS", 0),
        ("SIMHASH_MIN_TOKENS", "many"),
        ("SIMHASH_SHINGLE_SIZE", 0),
        ("SIMHASH_SEGMENTER", "spaces"),
        ("SIMHASH_MAX_WEIGHT", 0),
        ("SIMHASH_MAX_WEIGHT", "nan"),
        ("SIMHASH_MAX_WEIGHT", "heavy"),
        ("SIMHASH_MAIN_CONTENT", "sometimes"),
        ("SIMHASH_TEMPLATE_SUPPRESSION", "sometimes"),
    ],
)
def test_invalid_values_name_the_setting(name: str, value: Any) -> None:
    with pytest.raises(ValueError, match=name):
        parse(**{name: value})


def test_every_fingerprint_option_has_a_setting() -> None:
    """A new FingerprintOptions field is read from SIMHASH_<FIELD> with no change in config.py."""
    for option in dataclasses.fields(FingerprintOptions):
        default = getattr(FingerprintOptions(), option.name)
        assert getattr(fingerprint_options(Settings({f"SIMHASH_{option.name.upper()}": default})), option.name) == default


def test_fingerprint_options_are_converted() -> None:
    options = parse(
        SIMHASH_MIN_TOKENS="12",
        SIMHASH_SHINGLE_SIZE=4,
        SIMHASH_HASH_KEY="secret",
        SIMHASH_MAIN_CONTENT="False",
        SIMHASH_MAX_WEIGHT="inf",
    ).fingerprint
    assert (options.min_tokens, options.shingle_size, options.hash_key, options.main_content) == (
        12,
        4,
        b"secret",
        False,
    )
    assert options.max_weight == float("inf")  # no cap


def test_jobdir_keeps_the_index_beside_requests_seen(tmp_path: Path) -> None:
    assert parse(JOBDIR=str(tmp_path)).index == str(tmp_path / JOBDIR_INDEX_NAME)


def test_an_explicit_index_wins_over_jobdir(tmp_path: Path) -> None:
    assert parse(JOBDIR=str(tmp_path), SIMHASH_INDEX="memory").index == "memory"


@pytest.mark.parametrize(
    "url",
    [
        "redis://user:s3cret@host:63a79/0",
        "redis:/user:s3cret@host:6379",
        "redis://:s3#cret@host/x",
        "redis:/u:s3//cret@host",
        "  redis://:s3cret@host:6379/0",  # (else a directory: each crawler of a fleet its own index)
    ],
)
def test_a_bad_redis_url_is_refused_without_showing_its_password(url: str) -> None:
    with pytest.raises(ValueError, match="SIMHASH_INDEX") as error:
        parse(SIMHASH_INDEX=url)
    assert "s3" not in str(error.value) and "***" in str(error.value)

