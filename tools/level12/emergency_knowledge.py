"""EmergencyKnowledge: first-aid knowledge for a symptom."""

from __future__ import annotations

import copy
from typing import Any

from ..base import Record, Tool, ToolError
from ..registry import LEVEL_1_2


def normalise_symptom(symptom: Any) -> str:
    """Trim and lower-case. Upstream meant to reject a blank symptom but lower-cased the error
    object it built instead, so a blank symptom fails with this attribute error's text."""
    stripped = symptom.strip()
    if stripped == "":
        raise AttributeError("'Exception' object has no attribute 'lower'")
    return stripped.lower()


@LEVEL_1_2.register
class EmergencyKnowledge(Tool):
    name = "EmergencyKnowledge"
    description = "This API searches for a given symptom for emergency knowledge."
    input_parameters = {
        "symptom": {"type": "str", "description": "The symptom to search."},
    }
    output_parameters = {
        "results": {"type": "list", "description": "The list of results. Format be like [{\"name\":possible disease name, \"aid\": first-aid method},...]"},
    }
    database = "Symptom"

    def run(self, symptom: Any) -> list[dict[str, Any]]:
        key = normalise_symptom(symptom)
        symptoms = self.session.store("Symptom", writable=False)
        if key not in symptoms:
            raise ToolError("The symptom does not exist.")
        return [{"name": entry["name"], "aid": entry["aid"]} for entry in symptoms[key]]

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        """A blank symptom on either side raises the AttributeError, which escapes the evaluator."""
        return (
            normalise_symptom(response["input"]["symptom"]) == normalise_symptom(gold["input"]["symptom"])
            and response["output"] == gold["output"]
            and response["exception"] == gold["exception"]
        )

    @classmethod
    def check_corrected(cls, response: Record, gold: Record) -> bool:
        """Blank or non-text symptoms are simply incorrect."""
        try:
            return bool(cls.check(copy.deepcopy(response), copy.deepcopy(gold)))
        except (KeyError, AttributeError):
            return False
