import copy
from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2
from ..text import FULL, similar, validate


@LEVEL_1_2.register
class QueryAgenda(Tool):
    name = "QueryAgenda"
    description = "The API for getting a schedule item includes parameters for token, content, time, and location."
    input_parameters = {
        "token": {"type": "str", "description": "User's token."},
        "content": {"type": "str", "description": "The content of the agenda."},
        "time": {"type": "str", "description": "The time for agenda. Format: %Y-%m-%d %H:%M:%S"},
        "location": {"type": "str", "description": "The location of the agenda."},
    }
    output_parameters = {"info": {"type": "json", "description": "agenda info including username and time"}}
    database = "Agenda"

    def run(self, token: Any, content: Any, time: Any, location: Any) -> dict[str, Any]:
        if time:
            validate(time, FULL)
        username = self.session.resolve_token(token)
        for item in self.session.store("Agenda", writable=False).values():
            if item["username"] == username and (item["content"] == content or item["time"] == time):
                return copy.deepcopy(item)
        if content:
            raise ToolError(f"You have no agenda about {content}")
        if time:
            raise ToolError(f"You have no agenda at time : {time}")
        raise ToolError("Error")

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        asked, expected = response["input"], gold["input"]
        if not similar(asked["content"], expected["content"]):
            return False
        if asked["time"] != expected["time"] or asked["location"] != expected["location"]:
            return False
        return fields_equal(response, gold, "output", "exception")
