"""Small text and date helpers shared by tools and their checks."""

from __future__ import annotations

from datetime import datetime

FULL = "%Y-%m-%d %H:%M:%S"
DATE = "%Y-%m-%d"


def validate(value: str, pattern: str) -> datetime:
    """Parse as upstream's ``strptime`` check does; raises ValueError with Python's own text."""
    return datetime.strptime(value, pattern)


def _render(moment: datetime, pattern: str) -> str:
    # glibc prints years below 1000 without zero padding, and the recorded data came from Linux.
    return moment.strftime(pattern.replace("%Y", str(moment.year)))


def normalise_date(text: str, pattern: str) -> str | ValueError:
    """Upstream's date normaliser: the canonical text, or the parse error object on failure.

    Callers compare results with ``==``; two error objects are distinct objects and never equal,
    exactly like upstream's comparison of exception instances.
    """
    stripped = text.strip()
    pieces = stripped.split("-")
    if len(pieces) == 3 and len(pieces[0]) != 4:
        pieces[0] = pieces[0].rjust(4, "0")
        stripped = "-".join(pieces)
    try:
        return _render(datetime.strptime(stripped, pattern), pattern)
    except ValueError as error:
        return error


def overlap(a: str, b: str) -> float:
    """Jaccard ratio of the sets of single-space-separated pieces."""
    left, right = set(a.split(" ")), set(b.split(" "))
    return len(left & right) / len(left | right)


def similar(a: str, b: str) -> bool:
    """Upstream's word-overlap test: the ratio must be strictly above 0.5."""
    return overlap(a, b) > 0.5


def split_camel_case(name: str) -> str:
    """``QueryMeeting`` -> ``query meeting``: a space before each capital, lower-cased, trimmed."""
    return "".join(f" {c.lower()}" if c.isupper() else c for c in name).strip()


def space_before_capitals(keywords: str) -> str:
    """The level-3 evaluator's ToolSearcher keyword rewrite: ``QueryMeeting`` -> ``Query Meeting``.

    A space goes before every capital, case is kept, the ends are trimmed (``AI`` -> ``A I``).
    """
    return "".join(f" {c}" if c.isupper() else c for c in keywords).strip()
