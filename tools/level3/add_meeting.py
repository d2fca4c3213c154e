from typing import TYPE_CHECKING, Any

from ..base import Record, ToolError
from ..registry import LEVEL_3
from ..text import FULL, similar, validate
from ._common import Level3Tool

if TYPE_CHECKING:
    from ..environment import Session


@LEVEL_3.register
class AddMeeting(Level3Tool):
    name = "AddMeeting"
    description = (
        "This API allows users to make a reservation for a meeting and store the meeting information in the "
        "database.Function\uff1aAllow users to make a reservation for a meeting.Exception Handling\uff1a1. If the "
        "reservation is successful, return a success message.2. If the reservation fails, return a corresponding "
        "error message."
    )
    input_parameters = {
        "meeting_topic": {"type": "str", "description": "The title of the meeting, no more than 50 characters."},
        "start_time": {
            "type": "str",
            "description": "The start time of the meeting, in the pattern of %Y-%m-%d %H:%M:%S",
        },
        "end_time": {"type": "str", "description": "The end time of the meeting, in the pattern of %Y-%m-%d %H:%M:%S"},
        "location": {
            "type": "str",
            "description": "The location where the meeting to be held, no more than 100 characters.",
        },
        "attendees": {
            "type": "list(str)",
            "description": "The attendees of the meeting, including names, positions and other information.",
        },
    }
    output_parameters = {"status": {"type": "str", "description": "success or failed"}}
    state_records = ("meetings",)

    def __init__(self, session: "Session") -> None:
        super().__init__(session)
        # Grows with every reservation; no level-3 tool ever reads it.
        self.meetings: list[dict[str, Any]] = []

    def run(self, meeting_topic: Any, start_time: Any, end_time: Any, location: Any, attendees: Any) -> str:
        validate(start_time, FULL)
        validate(end_time, FULL)
        if meeting_topic.strip() == "":
            raise ToolError("Meeting Topic should not be null")
        self.meetings.append(
            {
                "meeting_topic": meeting_topic,
                "start_time": start_time,
                "end_time": end_time,
                "location": location,
                "attendees": attendees,
            }
        )
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        # No name assertion; the topic only needs a word overlap, and upstream deletes it from both
        # records (the caller's gold included) before comparing the rest.
        topic_matches = similar(response["input"]["meeting_topic"], gold["input"]["meeting_topic"])
        del response["input"]["meeting_topic"]
        del gold["input"]["meeting_topic"]
        return (
            topic_matches
            and response["input"] == gold["input"]
            and response["output"] == gold["output"]
            and response["exception"] == gold["exception"]
        )
