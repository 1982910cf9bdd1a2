"""The fingerprint options on the command line: one option per ``SIMHASH_*`` setting.

Each field of :class:`FingerprintOptions` is an option with the setting's name
(``shingle_size`` <- ``SIMHASH_SHINGLE_SIZE`` <- ``--shingle-size``) and its default, so a
new field needs no change here. An option left out takes the default, or, with an
index made with other options (``dedup --index``), the index's own: the options are in
its signature. An option given that conflicts with the index is refused, by name.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Any

from ..core import features, segment
from ..core.fingerprinter import Fingerprinter, FingerprintOptions
from ..index.base import signature_fields

_DEFAULTS = FingerprintOptions()
_HELP = {
    "shingle_size": "tokens per shingle",
    "weighting": "shingle weight on a page",
    "max_weight": "the largest weight of a shingle (inf: no cap)",
    "min_tokens": "pages with fewer tokens are not fingerprinted",
    "hash_key": "secret key of the feature hash (default: $SIMHASH_HASH_KEY, else none)",
    "segmenter": "Han text: characters, or jieba words",
    "main_content": "fingerprint the main text only",
    "template_suppression": "leave out the blocks a site repeats (learned from the pages before)",
    "wildcard_bits": "least-confident bits of a page its check may ignore (0: plain Hamming distance)",
}
_CHOICES = {"weighting": features.WEIGHTINGS, "segmenter": segment.SEGMENTERS}


def add_fingerprint_arguments(parser: argparse.ArgumentParser) -> None:
    """An option for every fingerprint setting, its default left to :func:`options_from_args`."""
    group = parser.add_argument_group("fingerprint options", "as the SIMHASH_* settings of the same names")
    for field in dataclasses.fields(FingerprintOptions):
        default = getattr(_DEFAULTS, field.name)
        flag = "--" + field.name.replace("_", "-")
        shown = "" if field.name == "hash_key" else f" (default: {default}), as SIMHASH_{field.name.upper()}"
        if isinstance(default, bool):
            group.add_argument(flag, action=argparse.BooleanOptionalAction, default=None,
                               help=_HELP.get(field.name, field.name.replace("_", " ")) + shown)
            continue
        kind = {int: int, float: float}.get(type(default), str)
        group.add_argument(flag, type=kind, default=None, choices=_CHOICES.get(field.name),
                           metavar=None if field.name in _CHOICES else field.name.split("_")[-1].upper(),
                           help=_HELP.get(field.name, field.name.replace("_", " ")) + shown)


def options_from_args(args: argparse.Namespace, stored_signature: str = "") -> FingerprintOptions:
    """The options given, the others from *stored_signature* (an index's), else the defaults.

    Raise :exc:`ValueError` naming the option when one given conflicts with the index.
    """
    given = _given(args)
    stored = _stored_options(stored_signature) if stored_signature else {}
    for name, value in given.items():
        if name in stored and not _same(name, value, stored[name]):
            raise ValueError(
                f"--{name.replace('_', '-')} {_shown(name, value)} conflicts with the index, made with "
                f"{name}={_shown(name, stored[name])}: leave it out to use the index's, or use another --index"
            )
    if stored.get("hash_key", "unkeyed") != "unkeyed" and "hash_key" not in given:
        raise ValueError("the index was made with a hash key: give it with --hash-key or $SIMHASH_HASH_KEY")
    values = {name: value for name, value in stored.items() if name != "hash_key"}
    values.update(given)
    return FingerprintOptions(**values)


def fingerprinter_from_args(args: argparse.Namespace, stored_signature: str = "") -> Fingerprinter:
    try:
        return Fingerprinter(options_from_args(args, stored_signature))
    except ImportError as exc:  # rjieba or jieba not installed
        raise ValueError(str(exc)) from exc


def _given(args: argparse.Namespace) -> dict[str, Any]:
    given = {field.name: getattr(args, field.name) for field in dataclasses.fields(FingerprintOptions)
             if getattr(args, field.name, None) is not None}
    key = given.pop("hash_key", None) or os.environ.get("SIMHASH_HASH_KEY", "")
    if key:
        given["hash_key"] = key.encode()
    return given


def _stored_options(signature: str) -> dict[str, Any]:
    """The options of a signature, typed as :class:`FingerprintOptions` takes them; the hash
    key as the signature names it (``unkeyed``, or ``keyed:<digest>``)."""
    fields = signature_fields(signature)
    options: dict[str, Any] = {}
    for field in dataclasses.fields(FingerprintOptions):
        text = fields.get(field.name)
        if text is None:
            continue
        default = getattr(_DEFAULTS, field.name)
        if field.name == "hash_key":
            options["hash_key"] = text  # "unkeyed" or "keyed:<digest>": compared, never used
        elif field.name == "segmenter":
            options["segmenter"] = "char" if text == "char" else "auto"
        elif isinstance(default, bool):
            options[field.name] = text == "True"
        else:
            options[field.name] = type(default)(text)
    return options


def _same(name: str, given: Any, stored: Any) -> bool:
    if name == "segmenter":  # jieba, rjieba and "auto" cut words alike
        return (given == "char") == (stored == "char")
    if name == "hash_key":
        return signature_fields(FingerprintOptions(hash_key=given).signature())["hash_key"] == stored
    return bool(given == stored)


def _shown(name: str, value: Any) -> str:
    if name != "hash_key":
        return str(value)
    return "(none)" if value == "unkeyed" else "(a key)" if isinstance(value, bytes) else "(another key)"
