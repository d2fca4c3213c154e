from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_3
from ..retrieval import catalogue, catalogue_entry, found_tool


@LEVEL_3.register
class ToolSearcher(Tool):
    """The level-3 searcher: catalogue of the other level-3 tools, one match.

    Unlike the level-1/2 searcher it never records a GetUserToken entry, so a token-taking match
    fails on the missing attribute; no level-3 tool takes a token, so that path is unreachable with
    the shipped tools.
    """

    name = "ToolSearcher"
    description = "Searches for relevant tools in library based on the keyword."
    input_parameters = {"keywords": {"type": "str", "description": "The keyword to search for."}}
    output_parameters = {
        "best_matchs": {"type": "Union[List[dict], dict]", "description": "The best match tool(s)."}
    }

    def run(self, keywords: Any) -> Any:
        entries = catalogue(LEVEL_3)
        chosen = self.session.retriever.best(keywords, [text for _, text in entries])
        if chosen is None:
            raise ToolError("'NoneType' object has no attribute 'pop'")
        best = catalogue_entry(LEVEL_3, entries[chosen][0])
        if "token" in best["input_parameters"]:
            raise ToolError("'ToolSearcher' object has no attribute 'get_user_token_api'")
        return best

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return fields_equal(response, gold, "output", "exception")

    @classmethod
    def check_corrected(cls, response: Record, gold: Record) -> bool:
        """Same tool found and same exception (the descriptions are not compared)."""
        return found_tool(response.get("output")) == found_tool(gold.get("output")) and response.get(
            "exception"
        ) == gold.get("exception")
