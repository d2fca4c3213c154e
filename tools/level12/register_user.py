import string
from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2

TOKEN_ALPHABET = string.ascii_letters + string.digits
TOKEN_LENGTH = 18


@LEVEL_1_2.register
class RegisterUser(Tool):
    name = "RegisterUser"
    description = "The API for registering a account, given the username, password and email."
    input_parameters = {
        "username": {"type": "str", "description": "The username of the user."},
        "password": {"type": "str", "description": "The password of the user."},
        "email": {"type": "str", "description": "The email of the user."},
    }
    output_parameters = {"token": {"type": "str", "description": "The token of the user."}}
    database = "Account"
    writes = ("Account",)
    generates_random_values = True
    envelope_has_api_name = False

    def run(self, username: Any, password: Any, email: Any) -> dict[str, str]:
        accounts = self.session.store("Account", writable=True)
        if username in accounts:
            raise ToolError("The username already exists.")
        rng = self.session.rng
        token = "".join(rng.choice(TOKEN_ALPHABET) for _ in range(TOKEN_LENGTH)).lower()
        accounts[username] = {"password": password, "token": token, "email": email}
        return {"token": token}

    def adopt(self, executed: Record, recorded: Record) -> None:
        recorded_output = recorded.get("output")
        if executed.get("output") is None or not isinstance(recorded_output, dict) or "token" not in recorded_output:
            return
        account = self.session.store("Account", writable=True).get(executed["input"]["username"])
        if account is not None:
            account["token"] = recorded_output["token"]

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        if gold["output"] is None and response["output"] is not None:
            return False
        return fields_equal(response, gold, "input", "exception")
