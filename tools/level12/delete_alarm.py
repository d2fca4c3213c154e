"""DeleteAlarm: remove one of the token owner's alarms."""

from __future__ import annotations

from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2
from ..text import FULL, validate
from ._personal_records import first_owned


@LEVEL_1_2.register
class DeleteAlarm(Tool):
    name = "DeleteAlarm"
    description = "The API for removing an alarm includes a parameter for the time."
    input_parameters = {
        "token": {"type": "str", "description": "User's token."},
        "time": {"type": "str", "description": "The time for alarm. Format: %Y-%m-%d %H:%M:%S"},
    }
    output_parameters = {
        "status": {"type": "str", "description": "success or failed"},
    }
    database = "Alarm"
    writes = ("Alarm",)

    def run(self, token: Any, time: Any) -> str:
        validate(time, FULL)
        username = self.session.resolve_token(token)
        alarms = self.session.store("Alarm")
        key = first_owned(alarms, username, lambda alarm: alarm["time"] == time)
        if key is None:
            raise ToolError(f"You have no alarm clock at time : {time}")
        del alarms[key]
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return fields_equal(response, gold, "input", "output", "exception")
