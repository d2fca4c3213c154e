import copy
from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2
from ..text import FULL, similar, validate


@LEVEL_1_2.register
class QueryReminder(Tool):
    name = "QueryReminder"
    description = "The API for querying a reminder item includes content and time."
    input_parameters = {
        "token": {"type": "str", "description": "User's token."},
        "content": {"type": "str", "description": "The content of the reminder."},
        "time": {"type": "str", "description": "The time for the reminder. Format: %Y-%m-%d %H:%M:%S"},
    }
    output_parameters = {"reminder_info": {"type": "json", "description": "remind info"}}
    database = "Reminder"

    def run(self, token: Any, content: Any, time: Any) -> dict[str, Any]:
        validate(time, FULL)
        if content.strip() == "":
            raise ToolError("Content should not be null")
        username = self.session.resolve_token(token)
        for reminder in self.session.store("Reminder", writable=False).values():
            if reminder["username"] == username and (reminder["content"] == content or reminder["time"] == time):
                return copy.deepcopy(reminder)
        raise ToolError(f"You have no reminder about {content} or at time : {time}")

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        if not similar(response["input"]["content"].lower(), gold["input"]["content"].lower()):
            return False
        if response["input"]["time"] != gold["input"]["time"]:
            return False
        return fields_equal(response, gold, "output", "exception")
