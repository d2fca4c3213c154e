import copy
from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2


def _normalise_in_place(devices: Any) -> None:
    for device in devices:
        device["name"] = device["name"].strip().lower()
        device["description"] = device["description"].strip()
    devices.sort(key=lambda device: device["name"])


@LEVEL_1_2.register
class ModifyScene(Tool):
    name = "ModifyScene"
    description = "This API modifies a scene of smart home system, given the scene name and a list of smart devices"
    input_parameters = {
        "name": {"type": "str", "description": "The name of the scene."},
        "devices": {"type": "list", "description": "The list of smart devices, containing the name and description."},
    }
    output_parameters = {"status": {"type": "str", "description": "Whether the modification is successful."}}
    database = "Scenes"
    writes = ("Scenes",)

    def run(self, name: Any, devices: Any) -> str:
        scene = name.strip().lower()
        if scene == "":
            raise ToolError("Scene name cannot be empty.")
        # The caller's device objects are rewritten in place, as upstream does: the envelope's
        # ``input`` shares them and so shows the normalised, sorted list.
        seen = set()
        for device in devices:
            if "name" not in device or "description" not in device:
                raise ToolError("Invalid device format.")
            device["name"] = device["name"].strip().lower()
            device["description"] = device["description"].strip()
            if device["name"] in seen:
                raise ToolError("Device name cannot be duplicated.")
            seen.add(device["name"])
        devices.sort(key=lambda device: device["name"])
        scenes = self.session.store("Scenes", writable=True)
        if scene not in scenes:
            raise ToolError("The scene does not exist.")
        scenes[scene] = devices
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        _normalise_in_place(response["input"]["devices"])
        _normalise_in_place(gold["input"]["devices"])
        if response["input"]["name"].strip().lower() != gold["input"]["name"].strip().lower():
            return False
        if response["input"]["devices"] != gold["input"]["devices"]:
            return False
        return fields_equal(response, gold, "output", "exception")

    @classmethod
    def check_corrected(cls, response: Record, gold: Record) -> bool:
        # Raw-text or malformed device lists make the original check crash; they are simply wrong.
        try:
            return bool(cls.check(copy.deepcopy(response), copy.deepcopy(gold)))
        except (KeyError, TypeError, AttributeError):
            return False
