"""DeleteAccount: delete the token owner's account."""

from __future__ import annotations

from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2


@LEVEL_1_2.register
class DeleteAccount(Tool):
    """The Account store is the session's, so the token stops working for every tool at once."""

    name = "DeleteAccount"
    description = "Delete an account."
    input_parameters = {
        "token": {"type": "str", "description": "The token of the user."},
    }
    output_parameters = {
        "status": {"type": "str", "description": "success or failed"},
    }
    database = "Account"
    writes = ("Account",)
    envelope_has_api_name = False

    def run(self, token: Any) -> dict[str, str]:
        username = self.session.resolve_token(token)
        accounts = self.session.store("Account")
        if username not in accounts:
            raise ToolError("No such user.")
        del accounts[username]
        return {"status": "success"}

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return fields_equal(response, gold, "input", "output", "exception")
