from typing import Any

from ..base import Record, ToolError, assert_same_api, fields_equal
from ..registry import LEVEL_3
from ..text import FULL, validate
from ._common import Level3Tool


@LEVEL_3.register
class EmailReminder(Level3Tool):
    name = "EmailReminder"
    description = "This API sends an email reminder to the user with the meeting details."
    input_parameters = {
        "content": {"type": "str", "description": "The content of the email."},
        "time": {"type": "str", "description": "The time for the meeting. Format: %Y-%m-%d %H:%M:%S"},
        "location": {"type": "str", "description": "The location of the meeting."},
        "recipient": {"type": "str", "description": "The email address of the recipient."},
    }
    output_parameters = {"status": {"type": "str", "description": "success or failed"}}
    external_effect = True

    def run(self, content: Any, time: Any, location: Any, recipient: Any) -> str:
        validate(time, FULL)
        if content.strip() == "":
            raise ToolError("Content should not be empty")
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        # The e-mail text is free-form, so upstream drops it from both records (gold included) unseen.
        assert_same_api(response, gold)
        del response["input"]["content"]
        del gold["input"]["content"]
        return fields_equal(response, gold, "output", "exception", "input")
