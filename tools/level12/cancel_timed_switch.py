"""CancelTimedSwitch: cancel a device's timed switch."""

from __future__ import annotations

from typing import Any

from ..base import Record, Tool, ToolError
from ..registry import LEVEL_1_2
from ..text import FULL, normalise_date


@LEVEL_1_2.register
class CancelTimedSwitch(Tool):
    """The device name is lower-cased before the lookup, so the stored key ``coffee Maker`` is
    unreachable. Every recorded gold call uses an obsolete ``device_id`` parameter and is rejected,
    and the check reads the gold's ``name``: no prediction can be judged correct.
    """

    name = "CancelTimedSwitch"
    description = "Cancels a timed switch for a smart device."
    input_parameters = {
        "name": {"type": "str", "description": "The name of the smart device."},
        "time": {"type": "str", "description": "The time to switch the device on or off. Format: %Y-%m-%d %H:%M:%S"},
    }
    output_parameters = {
        "status": {"type": "str", "description": "Whether the time switch is successful."},
    }
    database = "TimeSwitch"
    writes = ("TimeSwitch",)
    # Annotated as ``device_id``; the tool now takes ``name``.
    renamed_parameters = {"device_id": "name"}

    def run(self, name: Any, time: Any) -> str:
        device = name.strip().lower()
        if device == "":
            raise ToolError("name cannot be empty.")
        moment = normalise_date(time, FULL)
        if isinstance(moment, ValueError):
            raise moment
        switches = self.session.store("TimeSwitch")
        if device not in switches:
            raise ToolError("device name does not exist.")
        schedule = switches[device]
        for position, entry in enumerate(schedule):
            if entry["time"] == moment:
                del schedule[position]
                return "success"
        raise ToolError("time does not exist.")

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        said, meant = response["input"], gold["input"]
        return (
            said["name"].strip().lower() == meant["name"].strip().lower()
            and normalise_date(said["time"], FULL) == normalise_date(meant["time"], FULL)
            and response["output"] == gold["output"]
            and response["exception"] == gold["exception"]
        )
