from typing import TYPE_CHECKING, Any

from ..base import Record, ToolError, assert_same_api, fields_equal
from ..registry import LEVEL_3
from ._common import Level3Tool
from .account_info import ACCOUNTS

if TYPE_CHECKING:
    from ..environment import Session


@LEVEL_3.register
class PersonalInfoUpdate(Level3Tool):
    name = "PersonalInfoUpdate"
    description = "The API for updating a user's personal information and address."
    input_parameters = {
        "username": {"type": "str", "description": "Name of the user."},
        "password": {"type": "str", "description": "Password of the user."},
        "address": {"type": "str", "description": "Updated address information."},
    }
    output_parameters = {"status": {"type": "str", "description": "Success or failure"}}
    state_records = ("accounts",)

    def __init__(self, session: "Session") -> None:
        super().__init__(session)
        # This tool's own copy of the accounts: AccountInfo never sees an updated address.
        self.accounts = [
            {"username": user, "password": secret, "email": email, "phone": phone}
            for user, secret, email, phone in ACCOUNTS
        ]

    def run(self, username: Any, password: Any, address: Any) -> dict[str, str]:
        for account in self.accounts:
            if account["username"] == username and account["password"] == password:
                account["address"] = address
                return {"status": "success"}
        raise ToolError("User not found.")

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        assert_same_api(response, gold)
        return fields_equal(response, gold, "input", "output")
