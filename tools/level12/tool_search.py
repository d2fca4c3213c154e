from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2
from ..retrieval import catalogue, catalogue_entry, found_tool

TOKEN_TOOL = "GetUserToken"


@LEVEL_1_2.register
class ToolSearcher(Tool):
    """Finds the catalogue tool whose search text is most similar to the keywords.

    The catalogue is every other level-1/2 tool. A match that takes a ``token`` comes paired with the
    GetUserToken entry, which upstream leaves with its ``desc_for_search`` field.
    """

    name = "ToolSearcher"
    description = "Searches for relevant tools in library based on the keywords."
    input_parameters = {"keywords": {"type": "str", "description": "The keyword to search for."}}
    output_parameters = {
        "best_matchs": {"type": "Union[List[dict], dict]", "description": "The best match tool(s)."}
    }

    def run(self, keywords: Any) -> Any:
        entries = catalogue(LEVEL_1_2)
        if TOKEN_TOOL not in (name for name, _ in entries):
            raise ToolError("GetUserToken API is not found.")
        chosen = self.session.retriever.best(keywords, [text for _, text in entries])
        if chosen is None:
            # Upstream pops the search text off a best match that was never set.
            raise ToolError("'NoneType' object has no attribute 'pop'")
        best = catalogue_entry(LEVEL_1_2, entries[chosen][0])
        if "token" in best["input_parameters"]:
            return [catalogue_entry(LEVEL_1_2, TOKEN_TOOL, with_search_text=True), best]
        return best

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return fields_equal(response, gold, "output", "exception")

    @classmethod
    def check_corrected(cls, response: Record, gold: Record) -> bool:
        """Same tool found (descriptions edited since annotation no longer matter), same exception."""
        return found_tool(response.get("output")) == found_tool(gold.get("output")) and response.get(
            "exception"
        ) == gold.get("exception")
