"""AddAlarm: set an alarm for the token's owner."""

from __future__ import annotations

from typing import Any

from ..base import Record, Tool, fields_equal
from ..registry import LEVEL_1_2
from ..text import FULL, validate
from ._personal_records import count_based_key


@LEVEL_1_2.register
class AddAlarm(Tool):
    name = "AddAlarm"
    description = "The API for setting an alarm includes a parameter for the alarm time."
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
        alarms[count_based_key(alarms)] = {"username": username, "time": time}
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return fields_equal(response, gold, "input", "output", "exception")
