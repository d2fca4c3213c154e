"""ModifyAgenda: replace one of the token owner's agenda items."""

from __future__ import annotations

from typing import Any

from ..base import Record, Tool, ToolError
from ..registry import LEVEL_1_2
from ..text import FULL, similar, validate
from ._personal_records import first_owned


@LEVEL_1_2.register
class ModifyAgenda(Tool):
    """Replaces the first item of the user with the same content or time. With neither content nor
    time given, upstream *returns* (not raises) an error object: the envelope's ``output`` is that
    object, equal to nothing, and ``exception`` is null. Kept as is.
    """

    name = "ModifyAgenda"
    description = "The API for modifying a schedule item includes parameters for content, time, and location."
    input_parameters = {
        "token": {"type": "str", "description": "User's token."},
        "content": {"type": "str", "description": "The content of the agenda."},
        "time": {"type": "str", "description": "The new time for agenda. Format: %Y-%m-%d %H:%M:%S"},
        "location": {"type": "str", "description": "The new location of the agenda."},
    }
    output_parameters = {
        "status": {"type": "str", "description": "success or failed"},
    }
    database = "Agenda"
    writes = ("Agenda",)

    def run(self, token: Any, content: Any, time: Any, location: Any) -> Any:
        if time:
            validate(time, FULL)
        username = self.session.resolve_token(token)
        agenda = self.session.store("Agenda")
        key = first_owned(agenda, username, lambda item: item["content"] == content or item["time"] == time)
        if key is not None:
            agenda[key] = {"username": username, "content": content, "time": time, "location": location}
            return "success"
        if content:
            raise ToolError(f"You have no agenda about {content}")
        if time:
            raise ToolError(f"You have no agenda at time : {time}")
        return Exception("Error")

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        said, meant = response["input"], gold["input"]
        return (
            similar(said["content"], meant["content"])
            and said["time"] == meant["time"]
            and said["location"] == meant["location"]
            and response["output"] == gold["output"]
            and response["exception"] == gold["exception"]
        )
