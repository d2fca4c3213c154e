"""DeleteMeeting: cancel one of the token owner's meetings."""

from __future__ import annotations

import copy
from typing import Any

from ..base import Record, Tool
from ..registry import LEVEL_1_2
from ._personal_records import MEETING_PARAMETERS, deletion_check, find_meeting


@LEVEL_1_2.register
class DeleteMeeting(Tool):
    """Matches by topic or start time; ``end_time``, ``location`` and ``attendees`` are ignored."""

    name = "DeleteMeeting"
    description = "This API allows users to delete a reservation for a meeting and remove the meeting information in the database."
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
