import copy
from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2


@LEVEL_1_2.register
class QueryScene(Tool):
    name = "QueryScene"
    description = "This API queries a scene of smart home system, given the scene name"
    input_parameters = {"name": {"type": "str", "description": "The name of the scene."}}
    output_parameters = {
        "devices": {"type": "list", "description": "The list of smart devices, containing the name and description."}
    }
    database = "Scenes"

    def run(self, name: Any) -> list[dict[str, Any]]:
        scene = name.strip().lower()
        if scene == "":
            raise ToolError("Scene name cannot be empty.")
        scenes = self.session.store("Scenes", writable=False)
        if scene not in scenes:
            raise ToolError("Scene not found.")
        return copy.deepcopy(scenes[scene])

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        if response["input"]["name"].strip().lower() != gold["input"]["name"].strip().lower():
            return False
        return fields_equal(response, gold, "output", "exception")
