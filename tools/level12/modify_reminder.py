from typing import Any

from ..base import Record, Tool, ToolError, assert_same_api, fields_equal
from ..registry import LEVEL_1_2
from ..text import FULL, similar, validate


@LEVEL_1_2.register
class ModifyReminder(Tool):
    name = "ModifyReminder"
    description = "The API for deleting a reminder item includes content and time."
    input_parameters = {
        "token": {"type": "str", "description": "User's token."},
        "content": {"type": "str", "description": "The content of the conference."},
        "time": {"type": "str", "description": "The time for conference. Format: %Y-%m-%d %H:%M:%S"},
    }
    output_parameters = {"status": {"type": "str", "description": "success or failed"}}
    database = "Reminder"
    writes = ("Reminder",)

    def run(self, token: Any, content: Any, time: Any) -> str:
        validate(time, FULL)
        if content.strip() == "":
            raise ToolError("Content should not be null")
        username = self.session.resolve_token(token)
        for reminder in self.session.store("Reminder", writable=True).values():
            if reminder["username"] == username and (reminder["content"] == content or reminder["time"] == time):
                reminder["content"], reminder["time"] = content, time
                return "success"
        raise ToolError(f"You have no reminder about {content} or at time : {time}")

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        assert_same_api(response, gold)
        if not similar(response["input"]["content"].lower(), gold["input"]["content"].lower()):
            return False
        if response["input"]["time"] != gold["input"]["time"]:
            return False
        return fields_equal(response, gold, "output", "exception")
