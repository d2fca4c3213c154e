"""ModifyMeeting: change one of the token owner's meetings (spec tools-a-m §ModifyMeeting)."""

from __future__ import annotations

from typing import Any

from ..base import Record, Tool
from ..registry import LEVEL_1_2
from ._personal_records import first_owned, meeting_check, no_meeting_error, validate_meeting_times


@LEVEL_1_2.register
class ModifyMeeting(Tool):
    """Updates the topic and the times in place; like upstream, it never updates ``location`` or
    ``attendees``, and a new start time also overwrites ``end_time``, even with an empty one.
    """

    name = "ModifyMeeting"
    description = "This API allows users to modify a reservation for a meeting"
    input_parameters = {
        "token": {"type": "str", "description": "User's token."},
        "meeting_topic": {"type": "str", "description": "The title of the meeting, no more than 50 characters."},
        "start_time": {"type": "str", "description": "The start time of the meeting, in the pattern of %Y-%m-%d %H:%M:%S"},
        "end_time": {"type": "str", "description": "The end time of the meeting, in the pattern of %Y-%m-%d %H:%M:%S"},
        "location": {"type": "str", "description": "The location where the meeting to be held, no more than 100 characters."},
        "attendees": {"type": "list(str)", "description": "The attendees of the meeting, including names, positions and other information."},
    }
    output_parameters = {
        "status": {"type": "str", "description": "success or failed"},
    }
    database = "Meeting"

    def run(
        self, token: Any, meeting_topic: Any, start_time: Any, end_time: Any, location: Any, attendees: Any
    ) -> str:
        validate_meeting_times(meeting_topic, start_time, end_time)
        username = self.session.resolve_token(token)
        meetings = self.session.store("Meeting")
        key = first_owned(
            meetings,
            username,
            lambda meeting: meeting["meeting_topic"] == meeting_topic or meeting["start_time"] == start_time,
        )
        if key is None:
            raise no_meeting_error(meeting_topic, start_time)
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
