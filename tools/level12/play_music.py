from typing import Any

from ..base import Record, Tool, ToolError
from ..registry import LEVEL_1_2


@LEVEL_1_2.register
class PlayMusic(Tool):
    name = "PlayMusic"
    description = "This API triggers a music player to play music."
    input_parameters = {"music_name": {"type": "str", "description": "The name of the music to play."}}
    output_parameters = {
        "status": {"type": "str", "description": "The corresponding url scheme to trigger the music player."}
    }
    external_effect = True

    def run(self, music_name: Any) -> str:
        music_name = music_name.lower().strip()
        if music_name == "":
            raise ToolError("The music name cannot be empty.")
        return "music://" + music_name

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return response["output"] == gold["output"]
