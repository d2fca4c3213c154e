import copy
from datetime import datetime
from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2
from ..text import FULL, validate
from ._dates import parse_padded


@LEVEL_1_2.register
class QueryHealthData(Tool):
    name = "QueryHealthData"
    description = "This API queries the recorded health data in database of a given user and time span."
    input_parameters = {
        "user_id": {"type": "str", "description": "The user id of the given user. Cases are ignored."},
        "start_time": {"type": "str", "description": "The start time of the time span. Format: %Y-%m-%d %H:%M:%S"},
        "end_time": {"type": "str", "description": "The end time of the time span. Format: %Y-%m-%d %H:%M:%S"},
    }
    output_parameters = {
        "health_data": {"type": "list", "description": "The health data of the given user and time span."}
    }
    database = "HealthData"

    def run(self, user_id: Any, start_time: Any, end_time: Any) -> list[dict[str, Any]]:
        user_id = user_id.upper().strip()
        start, end = parse_padded(start_time, FULL), parse_padded(end_time, FULL)
        if user_id == "":
            raise ToolError("The user id cannot be empty.")
        if isinstance(start, ValueError) and isinstance(end, ValueError):
            raise ToolError(f"{start}; {end}")
        if isinstance(start, ValueError):
            raise start
        if isinstance(end, ValueError):
            raise end
        if start > end:
            raise ToolError("The start time cannot be later than the end time.")
        users = self.session.store("HealthData", writable=False)
        if user_id not in users:
            raise ToolError("The user id does not exist.")
        found = [record for record in users[user_id] if start <= validate(record["time"], FULL) <= end]
        if not found:
            raise ToolError("There is no health data in the given time span.")
        return copy.deepcopy(found)

    @staticmethod
    def _normalised(arguments: dict[str, Any]) -> tuple[str, datetime | ValueError, datetime | ValueError]:
        return (
            arguments["user_id"].upper().strip(),
            parse_padded(arguments["start_time"], FULL),
            parse_padded(arguments["end_time"], FULL),
        )

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        # Parse errors are distinct objects, so unparsable times never compare equal.
        if cls._normalised(response["input"]) != cls._normalised(gold["input"]):
            return False
        return fields_equal(response, gold, "output", "exception")
