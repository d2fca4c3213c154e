"""DeleteScene: delete a smart-home scene by name."""

from __future__ import annotations

from typing import Any

from ..base import Record, Tool, ToolError
from ..registry import LEVEL_1_2


@LEVEL_1_2.register
class DeleteScene(Tool):
    name = "DeleteScene"
    description = "This API deletes a scene by its name."
    input_parameters = {
        "name": {"type": "str", "description": "The name of the scene."},
    }
    output_parameters = {
        "status": {"type": "str", "description": "Whether the deletion is successful."},
    }
    database = "Scenes"
    writes = ("Scenes",)

    def run(self, name: Any) -> str:
        scene = name.strip().lower()
        if scene == "":
            raise ToolError("Scene name cannot be empty.")
        scenes = self.session.store("Scenes")
        if scene not in scenes:
            raise ToolError("The scene does not exist.")
        del scenes[scene]
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return (
            response["input"]["name"].strip().lower() == gold["input"]["name"].strip().lower()
            and response["output"] == gold["output"]
            and response["exception"] == gold["exception"]
        )
