"""DeleteAgenda: delete one of the token owner's agenda items."""

from __future__ import annotations

from typing import Any

from ..base import Record, Tool, ToolError
from ..registry import LEVEL_1_2
from ..text import FULL, validate
from ._personal_records import deletion_check, first_owned


@LEVEL_1_2.register
class DeleteAgenda(Tool):
    """Matches by content or time; the initial agenda times are dates only, so initial items match
    by content alone. With neither given it reports success without deleting (upstream bug).
    """

    name = "DeleteAgenda"
    description = "The API for deleting a schedule item includes parameters for token, content, time, and location."
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
        if time:
            validate(time, FULL)
        username = self.session.resolve_token(token)
        agenda = self.session.store("Agenda")
        key = first_owned(agenda, username, lambda item: item["content"] == content or item["time"] == time)
        if key is not None:
            del agenda[key]
            return "success"
        if content:
            raise ToolError(f"You have no meeting about {content}")
        if time:
            raise ToolError(f"You have no meeting at time : {time}")
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        """Two successes compare only ``input.time``; otherwise output and exception."""
        return deletion_check(response, gold)
