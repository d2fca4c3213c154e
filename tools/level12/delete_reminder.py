"""DeleteReminder: delete one of the token owner's reminders."""

from __future__ import annotations

from typing import Any

from ..base import Record, Tool, ToolError
from ..registry import LEVEL_1_2
from ..text import FULL, validate
from ._personal_records import deletion_check, first_owned


@LEVEL_1_2.register
class DeleteReminder(Tool):
    name = "DeleteReminder"
    description = "The API for deleting a reminder item includes content and time."
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
        username = self.session.resolve_token(token)
        reminders = self.session.store("Reminder")
        key = first_owned(
            reminders, username, lambda reminder: reminder["content"] == content or reminder["time"] == time
        )
        if key is None:
            raise ToolError(f"You have no reminder about {content} or at time : {time}")
        del reminders[key]
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        """Two successes compare only ``input.time``; otherwise output and exception."""
        return deletion_check(response, gold)
