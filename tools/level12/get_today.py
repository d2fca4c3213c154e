"""GetToday: the benchmark's fixed "current" date."""

from __future__ import annotations

from typing import Any

from ..base import Record, Tool
from ..registry import LEVEL_1_2

# Upstream returns this constant, not the wall-clock date; all 7 recorded
# GetToday results show it, and the AI turns that follow repeat it as "today".
TODAY = "2023-03-31"


@LEVEL_1_2.register
class GetToday(Tool):
    """Always :data:`TODAY`, with ``input`` null; no clock is read, so results never drift."""

    name = "GetToday"
    description = "This API gets the current date."
    input_parameters = {}
    output_parameters = {
        "date": {"type": "str", "description": "The current date. Format: %Y-%m-%d"},
    }

    def echo_input(self, values: dict[str, Any]) -> None:
        return None

    def run(self) -> str:
        return TODAY

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        """The gold record is not consulted: every executed GetToday() is correct."""
        return response["output"] is not None and response["exception"] is None and response["input"] is None
