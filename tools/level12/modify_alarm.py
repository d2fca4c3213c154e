"""ModifyAlarm: move one of the token owner's alarms."""

from __future__ import annotations

from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2
from ..text import FULL, validate
from ._personal_records import first_owned


@LEVEL_1_2.register
class ModifyAlarm(Tool):
    name = "ModifyAlarm"
    description = "The API for modifying an alarm includes a parameter for the from_time to to_time."
    input_parameters = {
        "token": {"type": "str", "description": "User's token."},
        "from_time": {"type": "str", "description": "The time for alarm which changed from. Format: %Y-%m-%d %H:%M:%S"},
        "to_time": {"type": "str", "description": "The time for alarm which changed to. Format: %Y-%m-%d %H:%M:%S"},
    }
    output_parameters = {
        "status": {"type": "str", "description": "success or failed"},
    }
    database = "Alarm"
    writes = ("Alarm",)

    def run(self, token: Any, from_time: Any, to_time: Any) -> str:
        validate(from_time, FULL)
        validate(to_time, FULL)
        username = self.session.resolve_token(token)
        alarms = self.session.store("Alarm")
        key = first_owned(alarms, username, lambda alarm: alarm["time"] == from_time)
        if key is None:
            # Upstream's text says "agenda" here.
            raise ToolError(f"You have no agenda at time : {from_time}")
        alarms[key] = {"username": username, "time": to_time}
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return fields_equal(response, gold, "input", "output", "exception")
