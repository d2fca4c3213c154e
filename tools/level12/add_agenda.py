"""AddAgenda: add an agenda item for the token's owner."""

from __future__ import annotations

from typing import Any

from ..base import Record, Tool, ToolError, assert_same_api
from ..registry import LEVEL_1_2
from ..text import FULL, similar, validate
from ._personal_records import count_based_key


@LEVEL_1_2.register
class AddAgenda(Tool):
    name = "AddAgenda"
    description = "The API for adding a agenda item includes content, time and location."
    input_parameters = {
        "token": {"type": "str", "description": "User's token."},
        "content": {"type": "str", "description": "The content of the agenda."},
        "time": {"type": "str", "description": "The time for agenda. Format: %Y-%m-%d %H:%M:%S"},
        "location": {"type": "str", "description": "The location of the agenda."},
    }
    output_parameters = {
        "status": {"type": "str", "description": "success or failed"},
    }
    database = "Agenda"
    writes = ("Agenda",)

    def run(self, token: Any, content: Any, time: Any, location: Any) -> str:
        validate(time, FULL)
        if content.strip() == "":
            raise ToolError("Content should not be null")
        username = self.session.resolve_token(token)
        agenda = self.session.store("Agenda")
        agenda[count_based_key(agenda)] = {
            "username": username,
            "content": content,
            "time": time,
            "location": location,
        }
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        assert_same_api(response, gold)
        said, meant = response["input"], gold["input"]
        return (
            similar(said["content"], meant["content"])
            and said["time"] == meant["time"]
            and said["location"] == meant["location"]
            and response["output"] == gold["output"]
            and response["exception"] == gold["exception"]
        )
