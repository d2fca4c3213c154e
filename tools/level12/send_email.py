import re
from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2

# Lowercase only, no sub-domains, 2-3 character top-level domain: upstream's rule, kept as is.
RECEIVER_PATTERN = re.compile(r"^[a-z0-9]+[\._]?[a-z0-9]+[@]\w+[.]\w{2,3}$")


@LEVEL_1_2.register
class SendEmail(Tool):
    name = "SendEmail"
    description = "This API for sending email, given the receiver, subject and content."
    input_parameters = {
        "receiver": {"type": "str", "description": "The receiver address of the email."},
        "subject": {"type": "str", "description": "The subject address of the email."},
        "content": {"type": "str", "description": "The content of the email."},
    }
    output_parameters = {"status": {"type": "str", "description": "The status of the email."}}
    external_effect = True

    def run(self, receiver: Any, subject: Any, content: Any) -> str:
        receiver, subject, content = receiver.strip(), subject.strip(), content.strip()
        if not RECEIVER_PATTERN.search(receiver):
            raise ToolError("Email address of the receiver is invalid.")
        if subject == "":
            raise ToolError("Subject cannot be empty.")
        if content == "":
            raise ToolError("Content cannot be empty.")
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        asked, expected = response["input"], gold["input"]
        if asked["receiver"].strip().lower() != expected["receiver"].strip().lower():
            return False
        if asked["subject"].strip() != expected["subject"].strip():
            return False
        if asked["content"].strip() != expected["content"].strip():
            return False
        return fields_equal(response, gold, "output", "exception")
