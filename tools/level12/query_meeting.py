import copy
from typing import Any

from ..base import Record, Tool
from ..registry import LEVEL_1_2
from ._personal_records import MEETING_PARAMETERS, find_meeting, meeting_check


@LEVEL_1_2.register
class QueryMeeting(Tool):
    name = "QueryMeeting"
    description = "This API allows users to query the information of a meeting."
    input_parameters = MEETING_PARAMETERS
    output_parameters = {"meeting_info": {"type": "json", "description": "meeting info"}}
    database = "Meeting"

    def run(
        self, token: Any, meeting_topic: Any, start_time: Any, end_time: Any, location: Any, attendees: Any
    ) -> dict[str, Any]:
        meetings, key = find_meeting(self.session, token, meeting_topic, start_time, end_time, writable=False)
        return copy.deepcopy(meetings[key])

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        """As AddMeeting's: deletes ``meeting_topic`` from both inputs in place."""
        return meeting_check(response, gold)
