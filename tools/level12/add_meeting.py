"""AddMeeting: reserve a meeting for the token's owner."""

from __future__ import annotations

from typing import Any

from ..base import Record, Tool, ToolError
from ..registry import LEVEL_1_2
from ..text import FULL, validate
from ._personal_records import MEETING_PARAMETERS, max_based_key, meeting_check


@LEVEL_1_2.register
class AddMeeting(Tool):
    """Stores the meeting exactly as received; the descriptor's length limits are not enforced.

    Under the paper protocol ``attendees`` arrives as text while the recordings hold a list, so
    a parsed prediction never equals its gold record; structured (typed) calls do.
    """

    name = "AddMeeting"
    description = "This API allows users to make a reservation for a meeting and store the meeting information (e.g., topic, time, location, attendees) in the database."
    input_parameters = MEETING_PARAMETERS
    output_parameters = {
        "status": {"type": "str", "description": "success or failed"},
    }
    database = "Meeting"
    writes = ("Meeting",)

    def run(
        self, token: Any, meeting_topic: Any, start_time: Any, end_time: Any, location: Any, attendees: Any
    ) -> str:
        validate(start_time, FULL)
        validate(end_time, FULL)
        if meeting_topic.strip() == "":
            raise ToolError("Meeting Topic should not be null")
        meetings = self.session.store("Meeting")
        key = max_based_key(meetings)
        username = self.session.resolve_token(token)
        meetings[key] = {
            "username": username,
            "meeting_topic": meeting_topic,
            "start_time": start_time,
            "end_time": end_time,
            "location": location,
            "attendees": attendees,
        }
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        """Deletes ``meeting_topic`` from both inputs: judging the same gold twice raises KeyError."""
        return meeting_check(response, gold)
