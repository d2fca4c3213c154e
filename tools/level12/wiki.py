from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2


@LEVEL_1_2.register
class Wiki(Tool):
    name = "Wiki"
    description = "This API for searching a keyword in Wikipedia."
    input_parameters = {"keyword": {"type": "str", "description": "The keyword to search."}}
    output_parameters = {
        "results": {
            "type": "dict",
            "description": "The list of results. Format be like {\"url\": \"xxx\", \"summary\": \"xxx\", \"content\": \"xxx\"}",
        }
    }
    database = "Wiki"

    def run(self, keyword: Any) -> dict[str, str]:
        title = keyword.replace("_", " ").strip().lower()
        pages = self.session.store("Wiki", writable=False)
        if title not in pages:
            raise ToolError("Keyword not found.")
        return {"url": pages[title]["url"], "summary": pages[title]["summary"]}

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return fields_equal(response, gold, "api_name", "output", "exception")
