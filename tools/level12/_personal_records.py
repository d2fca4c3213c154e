"""Record keeping shared by the agenda, alarm, meeting and reminder tools.

These tools keep per-user records in id-keyed stores and pick the first record of the caller that
matches, in store order. Their key choice and their checks have upstream quirks kept on purpose.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..base import Record, ToolError
from ..text import FULL, similar, validate

if TYPE_CHECKING:
    from ..environment import Session


def count_based_key(store: dict[Any, Any]) -> int:
    """AddAgenda/AddAlarm's new key: the record count plus one, as an *integer*.

    The initial keys are strings, so an integer key never collides with them, but it can repeat a
    key added earlier in the session (after a deletion), which then overwrites that record in place.
    """
    return len(store) + 1


def max_based_key(store: dict[Any, Any]) -> str:
    """AddMeeting/AddReminder's new key: the largest key read as an integer, plus one, as text."""
    if not store:
        return "0"
    return str(max(int(key) for key in store) + 1)


def first_owned(store: dict[Any, Any], username: str, matches: Callable[[dict[str, Any]], bool]) -> Any:
    """The key of the first record (store order) of ``username`` that ``matches``, or None."""
    for key, record in store.items():
        if record["username"] == username and matches(record):
            return key
    return None


def validate_meeting_times(meeting_topic: Any, start_time: Any, end_time: Any) -> None:
    """DeleteMeeting/ModifyMeeting steps 1-2: validate the non-empty times, then the emptiness rule."""
    if start_time:
        validate(start_time, FULL)
    if end_time:
        validate(end_time, FULL)
    if meeting_topic.strip() == "" and not start_time:
        raise ToolError("Meeting Topic and start_time should not be null both")


def no_meeting_error(meeting_topic: Any, start_time: Any) -> ToolError:
    if meeting_topic:
        return ToolError(f"You have no meeting about {meeting_topic}")
    return ToolError(f"You have no meeting at time : {start_time}")


# The input schema Add/Delete/Modify/QueryMeeting all declare (upstream prompt data, byte-exact).
MEETING_PARAMETERS = {
    "token": {"type": "str", "description": "User's token."},
    "meeting_topic": {"type": "str", "description": "The title of the meeting, no more than 50 characters."},
    "start_time": {"type": "str", "description": "The start time of the meeting, in the pattern of %Y-%m-%d %H:%M:%S"},
    "end_time": {"type": "str", "description": "The end time of the meeting, in the pattern of %Y-%m-%d %H:%M:%S"},
    "location": {"type": "str", "description": "The location where the meeting to be held, no more than 100 characters."},
    "attendees": {"type": "list(str)", "description": "The attendees of the meeting, including names, positions and other information."},
}


def find_meeting(
    session: "Session", token: Any, meeting_topic: Any, start_time: Any, end_time: Any, *, writable: bool
) -> tuple[dict[str, Any], Any]:
    """Delete/Modify/QueryMeeting's lookup: validate, resolve the token, then the owner's first
    meeting (store order) with that topic or that start time. Returns the store and the key."""
    validate_meeting_times(meeting_topic, start_time, end_time)
    username = session.resolve_token(token)
    meetings = session.store("Meeting", writable=writable)
    key = first_owned(
        meetings, username, lambda meeting: meeting["meeting_topic"] == meeting_topic or meeting["start_time"] == start_time
    )
    if key is None:
        raise no_meeting_error(meeting_topic, start_time)
    return meetings, key


def meeting_check(response: Record, gold: Record) -> bool:
    """AddMeeting/ModifyMeeting's original check: it deletes ``meeting_topic`` from both inputs."""
    if not similar(response["input"]["meeting_topic"], gold["input"]["meeting_topic"]):
        return False
    del response["input"]["meeting_topic"]
    del gold["input"]["meeting_topic"]
    return (
        response["input"] == gold["input"]
        and response["output"] == gold["output"]
        and response["exception"] == gold["exception"]
    )


def deletion_check(response: Record, gold: Record, compared: str = "time") -> bool:
    """DeleteAgenda/DeleteReminder/DeleteMeeting's check: two successes compare only ``input[compared]``.

    DeleteMeeting's original passes ``time``, a field its records lack (a KeyError).
    """
    if response["output"] == "success" and gold["output"] == "success":
        return response["input"][compared] == gold["input"][compared]
    return response["output"] == gold["output"] and response["exception"] == gold["exception"]
