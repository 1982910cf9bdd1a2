"""The facade of the core: HTML or text in, a :class:`FingerprintResult` out.

Scrapy glue, the CLI and benchmarks use only this module's three names; how text is
extracted and which features are built is free to change behind them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

from . import features, text

Segmenter = Literal["auto", "jieba", "rjieba"]


@dataclass(frozen=True, slots=True)
class FingerprintOptions:
    """Everything that changes which fingerprint a page gets.

    Fingerprints made with different options are not comparable; :meth:`signature`
    names the options so a stored index can refuse fingerprints of another kind.
    """

    shingle_size: int = 3
    min_tokens: int = 30
    hash_key: bytes = field(default=b"", repr=False)
    segmenter: Segmenter = "auto"
    main_content: bool = True
    template_suppression: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.shingle_size <= 16:
            raise ValueError(f"shingle_size must be between 1 and 16, not {self.shingle_size}")
        if self.min_tokens < 1:
            raise ValueError(f"min_tokens must be at least 1, not {self.min_tokens}")
        if self.segmenter not in ("auto", "jieba", "rjieba"):
            raise ValueError(f"segmenter must be 'auto', 'jieba' or 'rjieba', not {self.segmenter!r}")

    def signature(self) -> str:
        """A stable string naming the options (the key's presence, never the key)."""
        values = asdict(self)
        values["hash_key"] = "keyed" if self.hash_key else "unkeyed"
        values.pop("segmenter")  # jieba and rjieba segment identically
        return "simhash-v1;" + ";".join(f"{k}={v}" for k, v in sorted(values.items()))


@dataclass(frozen=True, slots=True)
class FingerprintResult:
    """A fingerprint, or the reason there is none (``skip_reason``)."""

    fingerprint: int | None
    tokens: int = 0
    skip_reason: str | None = None

    @property
    def skipped(self) -> bool:
        return self.fingerprint is None


class Fingerprinter:
    """Turn pages into 64-bit SimHash fingerprints.

    It keeps per-site state (the template blocks learned so far), so use one
    instance per crawl and feed it pages with their URL.
    """

    def __init__(self, options: FingerprintOptions | None = None) -> None:
        self.options = options or FingerprintOptions()
        self._featurizer = features.Featurizer(
            shingle_size=self.options.shingle_size,
            hash_key=self.options.hash_key,
            segmenter=self.options.segmenter,
        )

    def from_html(
        self, html: bytes | str, *, url: str | None = None, encoding: str | None = None
    ) -> FingerprintResult:
        """Fingerprint a page; *encoding* is the HTTP-declared one, if any."""
        try:
            document = text.parse_html(html, encoding=encoding)
        except text.NotHtmlError as exc:
            return FingerprintResult(None, skip_reason=exc.reason)
        return self.from_text(text.main_text(document))

    def from_text(self, content: str) -> FingerprintResult:
        """Fingerprint plain text (already extracted main content)."""
        tokens = self._featurizer.tokens(text.normalize(content))
        if len(tokens) < self.options.min_tokens:
            reason = "empty" if not tokens else "too_short"
            return FingerprintResult(None, tokens=len(tokens), skip_reason=reason)
        return FingerprintResult(self._featurizer.fingerprint(tokens), tokens=len(tokens))
