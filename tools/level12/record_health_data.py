from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2
from ..text import FULL, normalise_date


@LEVEL_1_2.register
class RecordHealthData(Tool):
    name = "RecordHealthData"
    description = "This API records the health data of a user."
    input_parameters = {
        "user_id": {"type": "str", "description": "The ID of user."},
        "time": {"type": "str", "description": "The time of health data. Format: %Y-%m-%d %H:%M:%S"},
        "health_data": {
            "type": "list",
            "description": "The health data, with the format like [{'name': 'blood_pressure', 'value': '120/80'}, {'name': 'heart_rate', 'value': '80'}]",
        },
    }
    output_parameters = {"status": {"type": "str", "description": "The status of recording."}}
    database = "HealthData"
    writes = ("HealthData",)
    defaults = {"health_data": None}

    def run(self, user_id: Any, time: Any, health_data: Any) -> str:
        user_id = user_id.upper().strip()
        if user_id == "":
            raise ToolError("The user id cannot be empty.")
        moment = normalise_date(time, FULL)
        if isinstance(moment, ValueError):
            raise moment
        if not health_data:
            raise ToolError("The health data cannot be empty.")
        names = set()
        # Raw-text health data iterates as characters, none of which holds 'name'.
        for item in health_data:
            if "name" not in item:
                raise ToolError("The health data has invalid format.")
            if item["name"] in names:
                raise ToolError("The health data cannot contain duplicate items.")
            names.add(item["name"])
        users = self.session.store("HealthData", writable=True)
        records = users.setdefault(user_id, [])
        existing = [record for record in records if record["time"] == moment]
        if existing:
            # Items are written one by one: a later item without 'value' leaves earlier ones applied.
            for item in health_data:
                existing[-1][item["name"]] = item["value"]
        else:
            record = {"time": moment}
            for item in health_data:
                record[item["name"]] = item["value"]
            records.append(record)
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        asked, expected = response["input"], gold["input"]
        if str(asked["user_id"]).upper().strip() != expected["user_id"].upper().strip():
            return False
        if normalise_date(asked["time"], FULL) != normalise_date(expected["time"], FULL):
            return False
        return fields_equal(response, gold, "output", "exception")
