"""Every ``SIMHASH_*`` setting, parsed and validated once.

A bad value fails fast, when the crawler builds the components, with an error
that names the setting. The options that change fingerprints are read from the
fields of :class:`FingerprintOptions` (``shingle_size`` <- ``SIMHASH_SHINGLE_SIZE``),
so a new option there needs no change here.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal

from scrapy.exceptions import NotConfigured
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.job import job_dir

from .core.fingerprinter import FingerprintOptions
from .index import check_index_spec
from .index.base import DEFAULT_MAX_DISTANCE, DEFAULT_MIN_SIMILARITY, MAX_DISTANCE_LIMIT, check_ttl

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

Scope = Literal["crawl", "spider", "domain"]
Action = Literal["drop", "mark"]
OnIndexError = Literal["keep", "fail"]
FollowDropped = Literal["never", "siblings", "always"]

#: The index file kept in JOBDIR, next to Scrapy's own ``requests.seen``.
JOBDIR_INDEX_NAME = "simhash.index"
#: More would only waste memory: an empty index's bucket directory grows with it.
MAX_EXPECTED_SIZE = 2**32
_SCOPES = ("crawl", "spider", "domain")
_ACTIONS = ("drop", "mark")
_ON_INDEX_ERROR = ("keep", "fail")
_FOLLOW_DROPPED = ("siblings", "never", "always")


@dataclass(frozen=True, slots=True)
class SimhashSettings:
    """The parsed ``SIMHASH_*`` settings (see the README for each one)."""

    enabled: bool = True
    max_distance: int = DEFAULT_MAX_DISTANCE
    min_similarity: float = DEFAULT_MIN_SIMILARITY
    index: str | None = None
    #: What a shared (Redis) index's keys start with, after ``simhash:``: the project's
    #: own by default, so that two projects on one Redis database do not share pages.
    namespace: str = "scrapybot"
    scope: Scope = "crawl"
    action: Action = "drop"
    #: Hand on a page whose own record an earlier crawl (or another crawler) stored,
    #: for those who re-scrape; by default its items are dropped, its links followed.
    keep_unchanged: bool = False
    #: In drop mode, which near-duplicates still reach their callback for their links (their
    #: items dropped): "siblings", those named as another document than their original and
    #: not themselves reached through one; "always"; "never".
    follow_dropped: FollowDropped = "siblings"
    item_fields: tuple[str, ...] = ()
    http_statuses: frozenset[int] = frozenset({200})
    debug: bool = False
    expected_size: int = 1_000_000
    index_reset: bool = False
    ttl: float | None = None
    #: A disk store fsyncs at most this many seconds after a write (0: after each write;
    #: None: at close only): what a power cut may cost.
    fsync: float | None = None
    on_index_error: OnIndexError = "keep"
    fingerprint: FingerprintOptions = dataclasses.field(default_factory=FingerprintOptions)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> SimhashSettings:
        """Parse and validate; raise ``ValueError`` naming the first bad setting."""
        return cls(
            enabled=_enabled(settings),
            max_distance=_max_distance(settings),
            min_similarity=_min_similarity(settings),
            index=_index_spec(settings),
            namespace=_namespace(settings),
            scope=_choice(settings, "SIMHASH_SCOPE", _SCOPES),
            action=_choice(settings, "SIMHASH_ACTION", _ACTIONS),
            keep_unchanged=_read(settings, "SIMHASH_KEEP_UNCHANGED", settings.getbool, False),
            follow_dropped=_follow_dropped(settings),
            item_fields=_item_fields(settings),
            http_statuses=_http_statuses(settings),
            debug=_read(settings, "SIMHASH_DEBUG", settings.getbool, False),
            expected_size=_expected_size(settings),
            index_reset=_read(settings, "SIMHASH_INDEX_RESET", settings.getbool, False),
            ttl=_ttl(settings),
            fsync=_fsync(settings),
            on_index_error=_choice(settings, "SIMHASH_ON_INDEX_ERROR", _ON_INDEX_ERROR),
            fingerprint=fingerprint_options(settings),
        )


def enabled_settings(settings: BaseSettings) -> SimhashSettings:
    """:meth:`SimhashSettings.from_settings`, for a component that runs only when
    scrapy-simhash is on: ``NotConfigured`` when it is off (which Scrapy logs, with the
    reason, in ``scrapy shell``)."""
    config = SimhashSettings.from_settings(settings)
    if not config.enabled:
        raise NotConfigured(*([_OFF_IN_SHELL] if in_scrapy_shell(settings) else []))
    return config


#: Why scrapy-simhash is off in ``scrapy shell``.
_OFF_IN_SHELL = (
    "off in scrapy shell, so that a fetch neither drops its response nor changes the index"
    " (-s SIMHASH_ENABLED=True turns it on)"
)


def _enabled(settings: BaseSettings) -> bool:
    """SIMHASH_ENABLED; off in ``scrapy shell`` unless given on its command line: a page
    fetched there to look at would be stored in a persistent index (and then be
    "unchanged" in the next crawl, its items dropped), or dropped, leaving no response."""
    enabled = _read(settings, "SIMHASH_ENABLED", settings.getbool, True)
    given_here = settings.getpriority("SIMHASH_ENABLED") == SETTINGS_PRIORITIES["cmdline"]
    return enabled and (given_here or not in_scrapy_shell(settings))


def in_scrapy_shell(settings: BaseSettings) -> bool:
    """Whether *settings* are those of ``scrapy shell``: its command's own settings
    (``scrapy.commands.shell.Command.default_settings``) at the command's priority."""
    command = SETTINGS_PRIORITIES["command"]
    return (
        settings.get("DUPEFILTER_CLASS") == "scrapy.dupefilters.BaseDupeFilter"
        and settings.getpriority("DUPEFILTER_CLASS") == command
        and settings.getpriority("LOGSTATS_INTERVAL") == command
    )


def fingerprint_options(settings: BaseSettings) -> FingerprintOptions:
    """:class:`FingerprintOptions` from ``SIMHASH_<FIELD>`` settings, one per field."""
    values: dict[str, Any] = {}
    for option in dataclasses.fields(FingerprintOptions):
        name = f"SIMHASH_{option.name.upper()}"
        if settings.get(name) is None:
            continue
        values[option.name] = _option_value(settings, name, option.default)
        try:  # alone, so that an error names this setting
            FingerprintOptions(**{option.name: values[option.name]})
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}: {exc}") from exc
    return FingerprintOptions(**values)


def _option_value(settings: BaseSettings, name: str, default: Any) -> Any:
    """Read *name* with the getter that fits the type of the field's default."""
    if isinstance(default, bool):
        return _read(settings, name, settings.getbool, default)
    if isinstance(default, int):
        return _integer(settings, name, default)
    if isinstance(default, float):
        return _read(settings, name, settings.getfloat, default)
    value = settings.get(name)
    if isinstance(default, bytes):
        if not isinstance(value, (str, bytes)):
            raise ValueError(f"{name} must be a string, not {value!r}")
        return value.encode("utf-8") if isinstance(value, str) else value
    return value


def _integer(settings: BaseSettings, name: str, default: int) -> int:
    """``settings.getint``, refusing what it would truncate (3.7 is not 3) and booleans
    (``True`` is not 1: a setting meant as another one)."""
    value = settings.get(name)
    if not _whole(value):
        raise ValueError(f"{name} must be a whole number, not {value!r}")
    return int(_read(settings, name, settings.getint, default))


def _read(settings: BaseSettings, name: str, getter: Callable[[str, Any], Any], default: Any) -> Any:
    try:
        return getter(name, default)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: invalid value {settings.get(name)!r} ({exc})") from exc


def _choice(settings: BaseSettings, name: str, choices: tuple[str, ...]) -> Any:
    value = settings.get(name) or choices[0]
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, not {value!r}")
    return value


def _expected_size(settings: BaseSettings) -> int:
    value = _integer(settings, "SIMHASH_EXPECTED_SIZE", 1_000_000)
    if not 0 < value <= MAX_EXPECTED_SIZE:
        raise ValueError(f"SIMHASH_EXPECTED_SIZE must be between 1 and {MAX_EXPECTED_SIZE}, not {value!r}")
    return value


def _max_distance(settings: BaseSettings) -> int:
    value = _integer(settings, "SIMHASH_MAX_DISTANCE", DEFAULT_MAX_DISTANCE)
    if not 0 <= value <= MAX_DISTANCE_LIMIT:
        raise ValueError(f"SIMHASH_MAX_DISTANCE must be between 0 and {MAX_DISTANCE_LIMIT}, not {value}")
    return value


def _min_similarity(settings: BaseSettings) -> float:
    value: float = _read(settings, "SIMHASH_MIN_SIMILARITY", settings.getfloat, DEFAULT_MIN_SIMILARITY)
    if not 0.0 <= value <= 1.0:  # (also refuses nan)
        raise ValueError(f"SIMHASH_MIN_SIMILARITY must be between 0 and 1, not {value!r}")
    return value


def _namespace(settings: BaseSettings) -> str:
    value = settings.get("SIMHASH_NAMESPACE")
    if value is None:
        value = settings.get("BOT_NAME") or "scrapybot"
    if not isinstance(value, str):
        raise ValueError(f"SIMHASH_NAMESPACE must be a string, not {value!r}")
    return value


def _item_fields(settings: BaseSettings) -> tuple[str, ...]:
    fields = tuple(_read(settings, "SIMHASH_ITEM_FIELDS", settings.getlist, []))
    if not all(isinstance(name, str) and name.strip() for name in fields):
        raise ValueError(f"SIMHASH_ITEM_FIELDS must list item field names, not {fields!r}")
    return tuple(name.strip() for name in fields)


def _http_statuses(settings: BaseSettings) -> frozenset[int]:
    raw = settings.get("SIMHASH_HTTP_STATUSES")
    if isinstance(raw, str) and raw.strip().startswith("["):
        # -s SIMHASH_HTTP_STATUSES=[200,404]: a JSON list, which getlist would cut at its commas
        try:
            values = json.loads(raw)
        except ValueError as exc:
            raise ValueError(f"SIMHASH_HTTP_STATUSES: not a list of HTTP status codes: {raw!r}") from exc
    else:
        values = _read(settings, "SIMHASH_HTTP_STATUSES", settings.getlist, [200])
    try:
        statuses = frozenset(map(_status_code, values))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"SIMHASH_HTTP_STATUSES: not HTTP status codes: {values!r}") from exc
    if not statuses or not all(100 <= status <= 599 for status in statuses):
        raise ValueError(f"SIMHASH_HTTP_STATUSES must list HTTP status codes (100-599), not {values!r}")
    return statuses


def _status_code(value: Any) -> int:
    """A status code given as an int or its digits ("404" from the command line); not
    200.7 nor True, which ``int()`` would take."""
    if not _whole(value):
        raise ValueError(f"not a status code: {value!r}")
    return int(value)


def _whole(value: Any) -> bool:
    """Whether ``int()`` keeps all of *value* (not 3.7) and it means a number (not ``True``):
    a str is for ``int()`` to judge."""
    if isinstance(value, bool):
        return False
    return value.is_integer() if isinstance(value, float) else True


def _ttl(settings: BaseSettings) -> float | None:
    if settings.get("SIMHASH_TTL") in (None, ""):
        return None
    return check_ttl(_read(settings, "SIMHASH_TTL", settings.getfloat, None), "SIMHASH_TTL")


def _follow_dropped(settings: BaseSettings) -> FollowDropped:
    """SIMHASH_FOLLOW_DROPPED: "siblings", "never" (or False), "always" (or True)."""
    value = settings.get("SIMHASH_FOLLOW_DROPPED")
    if value in (True, False, "True", "true", "1", "False", "false", "0"):  # (True == 1, False == 0)
        return "always" if settings.getbool("SIMHASH_FOLLOW_DROPPED") else "never"
    return _choice(settings, "SIMHASH_FOLLOW_DROPPED", _FOLLOW_DROPPED)


def _fsync(settings: BaseSettings) -> float | None:
    """SIMHASH_FSYNC: "off" (or False), "always" (or True, 0), or seconds (> 0)."""
    value = settings.get("SIMHASH_FSYNC")
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):  # -s SIMHASH_FSYNC=True
        value = value.strip().lower() == "true"
    if isinstance(value, bool) or value in (None, "off", "always", ""):
        return 0.0 if value is True or value == "always" else None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if not 0 <= seconds < math.inf:
        raise ValueError(f"SIMHASH_FSYNC must be 'off', 'always' or a number of seconds, not {value!r}")
    return seconds


def _index_spec(settings: BaseSettings) -> str | None:
    """SIMHASH_INDEX as given; else the JOBDIR's index file; else ``None`` (memory)."""
    spec = settings.get("SIMHASH_INDEX")
    if spec not in (None, ""):
        try:
            return check_index_spec(spec)
        except ValueError as exc:
            raise ValueError(f"SIMHASH_INDEX: {exc}") from exc
    directory = job_dir(settings)
    return str(Path(directory, JOBDIR_INDEX_NAME)) if directory else None
