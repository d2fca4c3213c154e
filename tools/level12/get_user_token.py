from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2


@LEVEL_1_2.register
class GetUserToken(Tool):
    name = "GetUserToken"
    description = "Get the user token by username and password."
    input_parameters = {
        "username": {"type": "str", "description": "The username of the user."},
        "password": {"type": "str", "description": "The password of the user."},
    }
    output_parameters = {"token": {"type": "str", "description": "The token of the user."}}
    database = "Account"

    def run(self, username: Any, password: Any) -> dict[str, str]:
        accounts = self.session.store("Account", writable=False)
        if username not in accounts:
            raise ToolError("The username does not exist.")
        if accounts[username]["password"] != password:
            raise ToolError("The password is incorrect.")
        return {"token": accounts[username]["token"]}

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return fields_equal(response, gold, "input", "output", "exception")
