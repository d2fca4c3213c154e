"""ModifyMeeting: change one of the token owner's meetings."""

from __future__ import annotations

from typing import Any

from ..base import Record, Tool
from ..registry import LEVEL_1_2
from ._personal_records import MEETING_PARAMETERS, find_meeting, meeting_check


@LEVEL_1_2.register
class ModifyMeeting(Tool):
    """Updates the topic and the times in place; like upstream, it never updates ``location`` or
    ``attendees``, and a new start time also overwrites ``end_time``, even with an empty one.
    """

    name = "ModifyMeeting"
    description = "This API allows users to modify a reservation for a meeting"
    input_parameters = MEETING_PARAMETERS
    output_parameters = {
        "status": {"type": "str", "description": "success or failed"},
    }
    database = "Meeting"
    writes = ("Meeting",)

    def run(
        self, token: Any, meeting_topic: Any, start_time: Any, end_time: Any, location: Any, attendees: Any
    ) -> str:
        meetings, key = find_meeting(self.session, token, meeting_topic, start_time, end_time, writable=True)
        meeting = meetings[key]
        if meeting_topic:
            meeting["meeting_topic"] = meeting_topic
        if start_time:
            meeting["start_time"] = start_time
            meeting["end_time"] = end_time
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        """As AddMeeting's: deletes ``meeting_topic`` from both inputs in place."""
        return meeting_check(response, gold)
