from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2


@LEVEL_1_2.register
class QueryBalance(Tool):
    name = "QueryBalance"
    description = "This API queries the balance of a given user."
    input_parameters = {"token": {"type": "str", "description": "The token of the user."}}
    output_parameters = {"balance": {"type": "float", "description": "The balance of the user."}}
    database = "Bank"

    def run(self, token: Any) -> Any:
        try:
            username = self.session.resolve_token(token)
        except Exception:  # upstream rewrites every token failure into its own message
            raise ToolError("The token is incorrect.") from None
        accounts = self.session.store("Bank", writable=False)
        if username not in accounts:
            raise ToolError("The user does not have an account.")
        return accounts[username]["balance"]

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        if response["input"]["token"].strip() != gold["input"]["token"].strip():
            return False
        return fields_equal(response, gold, "output", "exception")
