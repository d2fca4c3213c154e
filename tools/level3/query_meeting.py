from typing import Any

from ..registry import LEVEL_3
from ._common import Level3Tool, lookup

_TEAM = ["John", "Mary", "Peter"]
_TEAM_MEETINGS = [
    {
        "meeting_id": 1,
        "meeting_name": "Meeting with the client",
        "meeting_time": "2021-01-01 10:00:00",
        "meeting_location": "Room 1",
        "meeting_attendees": _TEAM,
    },
    {
        "meeting_id": 2,
        "meeting_name": "Meeting about the new project",
        "meeting_time": "2021-01-02 10:00:00",
        "meeting_location": "Room 2",
        "meeting_attendees": _TEAM,
    },
]
_PAIR_MEETINGS = [
    {
        "meeting_id": 1,
        "meeting_name": "Meeting",
        "meeting_time": "2021-01-01 10:00:00",
        "meeting_location": "Room 1",
        "meeting_attendees": ["Tom", "Jerry"],
    }
]
MEETINGS = {
    "John": _TEAM_MEETINGS,
    "Mary": _TEAM_MEETINGS,
    "Peter": _TEAM_MEETINGS,
    "Tom": _PAIR_MEETINGS,
    "Jerry": _PAIR_MEETINGS,
}


@LEVEL_3.register
class QueryMeeting(Level3Tool):
    name = "QueryMeeting"
    description = "The API for retrieving the meeting details from the user's calendar."
    input_parameters = {"user_name": {"type": "str", "description": "Name of the user."}}
    output_parameters = {"meetings": {"type": "list", "description": "List of meetings."}}

    def run(self, user_name: Any) -> dict[str, list[dict[str, Any]]]:
        return {"meetings": lookup(MEETINGS, user_name)}
