import copy
from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2
from ..text import FULL, validate


@LEVEL_1_2.register
class QueryAlarm(Tool):
    name = "QueryAlarm"
    description = "The API for querying alarm clock, help user to check the alarm clock they have set."
    input_parameters = {
        "token": {"type": "str", "description": "User's token."},
        "time": {"type": "str", "description": "The time for alarm. Format: %Y-%m-%d %H:%M:%S"},
    }
    output_parameters = {
        "info": {"type": "json", "description": "alarm info including username, time, content and location"}
    }
    database = "Alarm"

    def run(self, token: Any, time: Any) -> dict[str, Any]:
        validate(time, FULL)
        username = self.session.resolve_token(token)
        for alarm in self.session.store("Alarm", writable=False).values():
            if alarm["username"] == username and alarm["time"] == time:
                return copy.deepcopy(alarm)
        raise ToolError(f"You have no alarm clock at time : {time}")

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return fields_equal(response, gold, "input", "output", "exception")
