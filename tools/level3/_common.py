"""What most level-3 tools share: the standard check and a helper for fresh copies of literal data."""

from __future__ import annotations

import copy
from typing import Any, TypeVar

from ..base import Record, Tool, assert_same_api, fields_equal

T = TypeVar("T")


def fresh(value: T) -> T:
    """A private copy of literal tool data, so that callers may edit results without touching the tool."""
    return copy.deepcopy(value)


class Level3Tool(Tool):
    """A level-3 tool: no token, no seed database; judged by the standard check unless it says otherwise."""

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        assert_same_api(response, gold)
        return fields_equal(response, gold, "output", "exception", "input")


def lookup(table: dict[Any, T], key: Any) -> T:
    """``table[key]`` as a fresh copy; an unknown key fails with the "key message" (the key's repr)."""
    return fresh(table[key])
