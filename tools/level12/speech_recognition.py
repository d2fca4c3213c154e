from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2


@LEVEL_1_2.register
class SpeechRecognition(Tool):
    name = "SpeechRecognition"
    description = "This API recognizes the speech from a given audio url."
    input_parameters = {
        "url": {"type": "str", "description": "The url to download the audio. It should end with .wav."}
    }
    output_parameters = {"transcript": {"type": "str", "description": "The transcript of the audio."}}
    database = "SpeechRecognition"

    def run(self, url: Any) -> str:
        url = url.strip()
        if not url.endswith(".wav"):
            raise ToolError("The url should end with .wav.")
        transcripts = self.session.store("SpeechRecognition", writable=False)
        if url not in transcripts:
            raise ToolError("The audio of this url failed to be processed.")
        return transcripts[url]

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return fields_equal(response, gold, "input", "output", "exception")
