import copy
from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2
from ..text import FULL, similar, validate


@LEVEL_1_2.register
class QueryMeeting(Tool):
    name = "QueryMeeting"
    description = "This API allows users to query the information of a meeting."
    input_parameters = {
        "token": {"type": "str", "description": "User's token."},
        "meeting_topic": {"type": "str", "description": "The title of the meeting, no more than 50 characters."},
        "start_time": {"type": "str", "description": "The start time of the meeting, in the pattern of %Y-%m-%d %H:%M:%S"},
        "end_time": {"type": "str", "description": "The end time of the meeting, in the pattern of %Y-%m-%d %H:%M:%S"},
        "location": {"type": "str", "description": "The location where the meeting to be held, no more than 100 characters."},
        "attendees": {"type": "list(str)", "description": "The attendees of the meeting, including names, positions and other information."},
    }
    output_parameters = {"meeting_info": {"type": "json", "description": "meeting info"}}
    database = "Meeting"

    def run(
        self, token: Any, meeting_topic: Any, start_time: Any, end_time: Any, location: Any, attendees: Any
    ) -> dict[str, Any]:
        if start_time:
            validate(start_time, FULL)
        if end_time:
            validate(end_time, FULL)
        if meeting_topic.strip() == "" and not start_time:
            raise ToolError("Meeting Topic and start_time should not be null both")
        username = self.session.resolve_token(token)
        for meeting in self.session.store("Meeting", writable=False).values():
            if meeting["username"] == username and (
                meeting["meeting_topic"] == meeting_topic or meeting["start_time"] == start_time
            ):
                return copy.deepcopy(meeting)
        if meeting_topic:
            raise ToolError(f"You have no meeting about {meeting_topic}")
        raise ToolError(f"You have no meeting at time : {start_time}")

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        if not similar(response["input"]["meeting_topic"], gold["input"]["meeting_topic"]):
            return False
        # Upstream removes the topic from both records before comparing the remaining inputs.
        del response["input"]["meeting_topic"]
        del gold["input"]["meeting_topic"]
        return fields_equal(response, gold, "input", "output", "exception")
