"""ImageCaption: the stored caption of a known image url."""

from __future__ import annotations

from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2


@LEVEL_1_2.register
class ImageCaption(Tool):
    """Looks the url up in the (read-only, never copied) ImageCaptioning array; no image is fetched."""

    name = "ImageCaption"
    description = "This API generates a caption for a given image."
    input_parameters = {
        "url": {"type": "str", "description": "The url to download the image. It should end with .jpg, .jpeg or .png."},
    }
    output_parameters = {
        "caption": {"type": "str", "description": "The generated caption."},
    }
    database = "ImageCaptioning"

    def run(self, url: Any) -> str:
        address = url.strip()
        if not address.endswith((".jpg", ".jpeg", ".png")):
            raise ToolError("The url should end with .jpg, .jpeg or .png.")
        for entry in self.session.store("ImageCaptioning", writable=False):
            if entry["url"] == address:
                return entry["caption"]
        raise ToolError("The image of this url failed to be processed.")

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return fields_equal(response, gold, "input", "output", "exception")
