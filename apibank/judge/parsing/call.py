"""The parsed form of a predicted API call, shared by both parsers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class ParseError(ValueError):
    """A call was found but its arguments are not acceptable literals."""


@dataclass(frozen=True)
class ParsedCall:
    """``name`` and keyword ``arguments`` in text order; ``text`` is the matched call span."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    text: str = ""
