from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2
from ..text import FULL, normalise_date


@LEVEL_1_2.register
class TimedSwitch(Tool):
    name = "TimedSwitch"
    description = "This API for setting a timed switch for a smart device."
    input_parameters = {
        "name": {"type": "str", "description": "The name of the smart device."},
        "time": {"type": "str", "description": "The time to switch the device on or off. Format: %Y-%m-%d %H:%M:%S"},
        "on": {"type": "bool", "description": "Whether to switch the device on or off."},
    }
    output_parameters = {"status": {"type": "str", "description": "Whether the time switch is successful."}}
    database = "TimeSwitch"
    writes = ("TimeSwitch",)
    # Annotated as ``device_id``; the tool now takes ``name``.
    renamed_parameters = {"device_id": "name"}

    def run(self, name: Any, time: Any, on: Any) -> str:
        device = name.strip().lower()
        if device == "":
            raise ToolError("Name cannot be empty.")
        moment = normalise_date(time, FULL)
        if isinstance(moment, ValueError):
            raise moment
        switches = self.session.store("TimeSwitch", writable=True)
        if device not in switches:
            switches[device] = [{"time": moment, "on": on}]
            return "success"
        for switch in switches[device]:
            if switch["time"] == moment:
                switch["on"] = on
                return "success"
        switches[device].append({"time": moment, "on": on})
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        asked, expected = response["input"], gold["input"]
        if asked["name"].strip().lower() != expected["name"].strip().lower():
            return False
        if normalise_date(asked["time"], FULL) != normalise_date(expected["time"], FULL):
            return False
        if asked["on"] != expected["on"]:
            return False
        return fields_equal(response, gold, "output", "exception")
