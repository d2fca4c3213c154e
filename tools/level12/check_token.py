from typing import Any

from ..base import Record, Tool, fields_equal
from ..registry import LEVEL_1_2


@LEVEL_1_2.register
class CheckToken(Tool):
    name = "CheckToken"
    description = "Check the user token."
    input_parameters = {"token": {"type": "str", "description": "The token of the user."}}
    output_parameters = {"username": {"type": "str", "description": "The username of the user."}}
    database = "Account"
    envelope_has_api_name = False

    def run(self, token: Any) -> dict[str, str]:
        return {"username": self.session.resolve_token(token)}

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return fields_equal(response, gold, "input", "output", "exception")
