"""DocumentQA: answer a question about a document."""

from __future__ import annotations

from typing import Any

from ..base import Record, Tool, ToolError
from ..registry import LEVEL_1_2

TOO_DIFFICULT = "The question is too difficult to answer."


@LEVEL_1_2.register
class DocumentQA(Tool):
    """Upstream tests whether the question *is a member of* the document's list of
    {question, answer} records, which a string never is: every known document gets
    :data:`TOO_DIFFICULT` and the stored answers are never returned. Kept, as the recordings show it.
    """

    name = "DocumentQA"
    description = "This API answers the question from a given document url."
    input_parameters = {
        "url": {"type": "str", "description": "The url to download the document. It should end with .txt."},
        "question": {"type": "str", "description": "The question to be answered."},
    }
    output_parameters = {
        "answer": {"type": "str", "description": "The answer to the question."},
    }
    database = "QuestionAnswering"

    def run(self, url: Any, question: Any) -> str:
        address = url.strip()
        asked = question.strip()
        if asked == "":
            raise ToolError("The question is empty.")
        documents = self.session.store("QuestionAnswering", writable=False)
        if address not in documents:
            raise ToolError("The document of this url failed to be processed.")
        return TOO_DIFFICULT

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        said, meant = response["input"], gold["input"]
        return (
            said["url"].strip() == meant["url"].strip()
            and said["question"].strip() == meant["question"].strip()
            and response["output"] == gold["output"]
            and response["exception"] == gold["exception"]
        )
