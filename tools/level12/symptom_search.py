from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2


def _normalised(symptom: str) -> str:
    # Upstream's check reuses this rule and so raises on an empty symptom instead of judging it.
    symptom = symptom.strip().lower()
    if symptom == "":
        raise ToolError("The symptom cannot be empty.")
    return symptom


@LEVEL_1_2.register
class SymptomSearch(Tool):
    name = "SymptomSearch"
    description = "This API searches for a given symptom."
    input_parameters = {"symptom": {"type": "str", "description": "The symptom to search."}}
    output_parameters = {
        "results": {
            "type": "list",
            "description": "The list of results. Format be like [{\"name\":possible disease name, \"description\": disease details},...]",
        }
    }
    database = "Symptom"

    def run(self, symptom: Any) -> list[dict[str, Any]]:
        symptom = _normalised(symptom)
        diseases = self.session.store("Symptom", writable=False)
        if symptom not in diseases:
            raise ToolError("The symptom does not exist.")
        return [{"name": disease["name"], "description": disease["description"]} for disease in diseases[symptom]]

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        if _normalised(response["input"]["symptom"]) != _normalised(gold["input"]["symptom"]):
            return False
        return fields_equal(response, gold, "output", "exception")

    @classmethod
    def check_corrected(cls, response: Record, gold: Record) -> bool:
        try:
            asked, expected = response["input"]["symptom"], gold["input"]["symptom"]
            if not isinstance(asked, str) or not isinstance(expected, str):
                return False
            if asked.strip().lower() != expected.strip().lower():
                return False
            return fields_equal(response, gold, "output", "exception")
        except KeyError:
            return False
