"""AddScene: add a smart-home scene."""

from __future__ import annotations

import copy
from typing import Any

from ..base import Record, Tool, ToolError
from ..registry import LEVEL_1_2


def _normalise_devices(devices: Any) -> None:
    """The check's in-place normalisation: trimmed lower-case names, trimmed descriptions, sorted."""
    for device in devices:
        device["name"] = device["name"].strip().lower()
        device["description"] = device["description"].strip()
    devices.sort(key=lambda device: device["name"])


@LEVEL_1_2.register
class AddScene(Tool):
    """Normalises ``devices`` in place, so the ``input.devices`` echo shows the normalised list.

    The echo and the tool share one private copy of the caller's list: the caller's own data is
    never edited. Non-list values behave as upstream's loop over them does (a string is iterated
    character by character; an empty string fails on ``sort``).
    """

    name = "AddScene"
    description = "This API adds a scene of smart home system, given the scene name and a list of smart devices"
    input_parameters = {
        "name": {"type": "str", "description": "The name of the scene."},
        "devices": {"type": "list", "description": "The list of smart devices, containing the name and description. Format be like [{\"name\": \"light\", \"description\": \"Smart light in the kitchen\"}, {\"name\": \"oven\", \"description\": \"Smart oven in the kitchen\"}, {\"name\": \"range hood\", \"description\": \"Smart range hood in the kitchen\"}]"},
    }
    output_parameters = {
        "status": {"type": "str", "description": "Whether succeed."},
    }
    database = "Scenes"
    writes = ("Scenes",)

    def execute(self, arguments: dict[str, Any]) -> Record:
        if isinstance(arguments.get("devices"), list):
            arguments = {**arguments, "devices": copy.deepcopy(arguments["devices"])}
        return super().execute(arguments)

    def run(self, name: Any, devices: Any) -> str:
        scene = name.strip().lower()
        if scene == "":
            raise ToolError("Scene name cannot be empty.")
        seen: set[Any] = set()
        for device in devices:
            if "name" not in device or "description" not in device:
                raise ToolError("Invalid device format.")
            device["name"] = device["name"].strip().lower()
            device["description"] = device["description"].strip()
            if device["name"] in seen:
                raise ToolError("Device name cannot be duplicated.")
            seen.add(device["name"])
        devices.sort(key=lambda device: device["name"])
        scenes = self.session.store("Scenes")
        if scene in scenes:
            raise ToolError("Scene name already exists.")
        scenes[scene] = devices
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        """Normalises both device lists in place; a string ``devices`` raises a non-key error."""
        said_name = response["input"]["name"].strip().lower()
        meant_name = gold["input"]["name"].strip().lower()
        _normalise_devices(response["input"]["devices"])
        _normalise_devices(gold["input"]["devices"])
        if said_name != meant_name or response["input"]["devices"] != gold["input"]["devices"]:
            return False
        if gold["output"] is None and response["output"] is not None:
            return False
        return response["exception"] == gold["exception"]

    @classmethod
    def check_corrected(cls, response: Record, gold: Record) -> bool:
        """As the original, on copies; malformed device lists are incorrect rather than an error."""
        try:
            return bool(cls.check(copy.deepcopy(response), copy.deepcopy(gold)))
        except (KeyError, TypeError, AttributeError):
            return False
