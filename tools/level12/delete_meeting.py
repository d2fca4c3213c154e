"""DeleteMeeting: cancel one of the token owner's meetings (spec tools-a-m §DeleteMeeting)."""

from __future__ import annotations

import copy
from typing import Any

from ..base import Record, Tool
from ..registry import LEVEL_1_2
from ._personal_records import deletion_check, first_owned, no_meeting_error, validate_meeting_times


@LEVEL_1_2.register
class DeleteMeeting(Tool):
    """Matches by topic or start time; ``end_time``, ``location`` and ``attendees`` are ignored."""

    name = "DeleteMeeting"
    description = "This API allows users to delete a reservation for a meeting and remove the meeting information in the database."
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
        del meetings[key]
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        """Two successes read ``input.time``, which DeleteMeeting records lack: a KeyError."""
        return deletion_check(response, gold, "time")

    @classmethod
    def check_corrected(cls, response: Record, gold: Record) -> bool:
        """Two successes compare ``start_time``, the meeting's counterpart of the agenda's ``time``."""
        try:
            return deletion_check(copy.deepcopy(response), copy.deepcopy(gold), "start_time")
        except KeyError:
            return False
