from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2


@LEVEL_1_2.register
class ModifyPassword(Tool):
    name = "ModifyPassword"
    description = "The API for modifying the password of the account."
    input_parameters = {
        "token": {"type": "str", "description": "The token of the user."},
        "old_password": {"type": "str", "description": "The old password of the user."},
        "new_password": {"type": "str", "description": "The new password of the user."},
    }
    output_parameters = {"status": {"type": "str", "description": "success or failed"}}
    database = "Account"
    writes = ("Account",)

    def run(self, token: Any, old_password: Any, new_password: Any) -> dict[str, str]:
        username = self.session.resolve_token(token)
        accounts = self.session.store("Account", writable=True)
        if accounts[username]["password"] != old_password:
            raise ToolError("The old password is incorrect.")
        accounts[username]["password"] = new_password
        return {"status": "success"}

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return fields_equal(response, gold, "input", "exception", "output")
