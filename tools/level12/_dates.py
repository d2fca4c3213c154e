"""Date pieces shared by the level-1/2 tools that parse, rather than re-render, padded dates."""

from __future__ import annotations

from datetime import datetime

from ..text import validate


def pad_year(text: str) -> str:
    """Steps 1-2 of upstream's date normaliser: strip, then left-pad a short year with zeros."""
    stripped = text.strip()
    pieces = stripped.split("-")
    if len(pieces) == 3 and len(pieces[0]) != 4:
        pieces[0] = pieces[0].rjust(4, "0")
        return "-".join(pieces)
    return stripped


def parse_padded(text: str, pattern: str) -> datetime | ValueError:
    """The padded text parsed with ``pattern``, or the parse error object (raised later by callers)."""
    try:
        return validate(pad_year(text), pattern)
    except ValueError as error:
        return error
