from typing import Any

from ..base import Record, Tool, fields_equal
from ..registry import LEVEL_1_2


@LEVEL_1_2.register
class OpenBankAccount(Tool):
    name = "OpenBankAccount"
    description = "This is an API for opening a bank account for a user, given the account, password and name."
    input_parameters = {
        "account": {"type": "str", "description": "The account for the user."},
        "password": {"type": "str", "description": "The password."},
        "name": {"type": "str", "description": "account holder name."},
    }
    output_parameters = {"status": {"type": "str", "description": "success or failed"}}
    state_records = ("accounts",)

    def __init__(self, session: Any) -> None:
        super().__init__(session)
        # Upstream keeps its own table per tool instance (no init database), keyed by integers.
        self.accounts: dict[int, dict[str, Any]] = {0: {"account": "test", "password": "test", "name": "yifei"}}

    def run(self, account: Any, password: Any, name: Any) -> str:
        if any(record["account"] == account for record in self.accounts.values()):
            return "failed"
        # The key skips 1: it is the record count plus one, not the next free index.
        self.accounts[len(self.accounts) + 1] = {"account": account, "password": password, "name": name}
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return fields_equal(response, gold, "input", "output", "exception")
