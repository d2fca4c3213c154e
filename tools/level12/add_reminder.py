"""AddReminder: add a reminder for the token's owner."""

from __future__ import annotations

from typing import Any

from ..base import Record, Tool, ToolError, assert_same_api
from ..registry import LEVEL_1_2
from ..text import FULL, similar, validate
from ._personal_records import max_based_key


@LEVEL_1_2.register
class AddReminder(Tool):
    name = "AddReminder"
    description = "The API for adding a reminder item includes content and time."
    input_parameters = {
        "token": {"type": "str", "description": "User's token."},
        "content": {"type": "str", "description": "The content of the conference."},
        "time": {"type": "str", "description": "The time for conference. Format: %Y-%m-%d %H:%M:%S"},
    }
    output_parameters = {
        "status": {"type": "str", "description": "success or failed"},
    }
    database = "Reminder"
    writes = ("Reminder",)

    def run(self, token: Any, content: Any, time: Any) -> str:
        validate(time, FULL)
        if content.strip() == "":
            raise ToolError("Content should not be null")
        reminders = self.session.store("Reminder")
        key = max_based_key(reminders)
        username = self.session.resolve_token(token)
        reminders[key] = {"username": username, "content": content, "time": time}
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        assert_same_api(response, gold)
        said, meant = response["input"], gold["input"]
        return (
            similar(said["content"].lower(), meant["content"].lower())
            and said["time"] == meant["time"]
            and response["output"] == gold["output"]
            and response["exception"] == gold["exception"]
        )
