from typing import Any

from ..base import ToolError
from ..registry import LEVEL_3
from ._common import Level3Tool

# (username, password, email, phone); PersonalInfoUpdate keeps its own copy of the same rows.
ACCOUNTS = (
    ("John", "123456", "john@example.com", "1234567890"),
    ("Mary", "abcdef", "mary@example.com", "0987654321"),
    ("Peter", "qwerty", "peter@example.com", "1231231234"),
    ("Tom", "asdfgh", "tom@example.com", "4564564567"),
    ("Jerry", "zxcvbn", "jerry@example.com", "7897897890"),
)


@LEVEL_3.register
class AccountInfo(Level3Tool):
    name = "AccountInfo"
    description = "API for retrieving and updating user account information."
    input_parameters = {
        "username": {"type": "str", "description": "Name of the user."},
        "password": {"type": "str", "description": "Password of the user."},
    }
    output_parameters = {
        "status": {"type": "str", "description": "success or failed"},
        "account_info": {"type": "dict", "description": "User account information"},
    }

    def run(self, username: Any, password: Any) -> dict[str, str]:
        # Upstream returns the bare account mapping, not the declared status/account_info shape.
        for user, secret, email, phone in ACCOUNTS:
            if user == username and secret == password:
                return {"email": email, "phone": phone}
        raise ToolError("User not found.")
