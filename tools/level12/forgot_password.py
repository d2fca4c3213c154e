"""ForgotPassword: two-step password reset."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base import (
    CallRejected,
    Record,
    Tool,
    ToolError,
    fields_equal,
    missing_argument_message,
)
from ..registry import LEVEL_1_2

if TYPE_CHECKING:
    from ..environment import Session

# Upstream disabled its random draw and always sends this code.
VERIFICATION_CODE = 970420
_NOT_GIVEN: Any = object()


@LEVEL_1_2.register
class ForgotPassword(Tool):
    """The pending code and user live in this instance, that is, in the session: the second step
    works only in the session where the first one ran. Arguments that were not passed are absent
    from the ``input`` echo, which lists ``status`` first and the rest in the order passed.
    """

    name = "ForgotPassword"
    description = "Sends an email to the user with a link to reset the password. Need call twice, first with 'Forgot Password' status to get the verification code, then call again with 'Verification Code' status to change the password. Must pass the name of the parameters when calling the API, like ForgotPassword(status='Forgot Password', username='username')."
    input_parameters = {
        "status": {"type": "str", "description": "'Forgot Password' for first call, after get the verification code, call again with 'Verification Code' to change the password."},
        "username": {"type": "str", "description": "The username of the user. Only needed for the first call."},
        "email": {"type": "str", "description": "The email of the user. Only needed for the first call."},
        "verification_code": {"type": "int", "description": "The verification code sent to the user. Only needed for the second call."},
        "new_password": {"type": "str", "description": "The new password of the user. Only needed for the second call."},
    }
    output_parameters = {
        "status": {"type": "str", "description": "success or failed"},
    }
    database = "Account"
    writes = ("Account",)
    # The first step leaves a pending verification that the second step needs.
    state_records = ("pending_code", "pending_username")
    # Marks the optional parameters (schemas, missing-argument rule); ``execute`` passes ``run`` only
    # what the caller gave, since "not passed" and "passed as None" differ upstream.
    defaults = {"username": None, "email": None, "verification_code": None, "new_password": None}
    envelope_has_api_name = False

    def __init__(self, session: "Session") -> None:
        super().__init__(session)
        self.pending_code: int | None = None
        self.pending_username: Any = None

    def execute(self, arguments: dict[str, Any]) -> Record:
        if "status" not in arguments:
            raise CallRejected("missing_argument", missing_argument_message(["status"]), "status")
        echo = {"status": arguments["status"], **{k: v for k, v in arguments.items() if k != "status"}}
        record: Record = {"input": echo}
        try:
            output = self.run(**arguments)
        except Exception as error:  # upstream's catch-all, as in Tool.execute
            record["output"] = None
            record["exception"] = str(error)
        else:
            record["output"] = output
            record["exception"] = None
        return record

    def run(
        self,
        status: Any,
        username: Any = _NOT_GIVEN,
        email: Any = _NOT_GIVEN,
        verification_code: Any = _NOT_GIVEN,
        new_password: Any = _NOT_GIVEN,
    ) -> Any:
        if status == "Forgot Password":
            if username is _NOT_GIVEN or email is _NOT_GIVEN:
                raise ToolError("The username and email are required for the first call.")
            accounts = self.session.store("Account", writable=False)
            if username not in accounts:
                raise ToolError("The username does not exist.")
            if accounts[username]["email"] != email:
                raise ToolError("The email is incorrect.")
            self.pending_code = VERIFICATION_CODE
            self.pending_username = username
            return VERIFICATION_CODE
        if status == "Verification Code":
            if self.pending_code is None:
                raise ToolError("You need to call the API with status 'Forgot Password' at first.")
            if new_password is _NOT_GIVEN or verification_code is _NOT_GIVEN:
                raise ToolError("The new password and verification code are required for the second call.")
            if verification_code != self.pending_code:
                raise ToolError("The verification code is incorrect.")
            # A deleted account raises KeyError, whose text is the quoted username, as upstream's.
            self.session.store("Account")[self.pending_username]["password"] = new_password
            return "success"
        raise ToolError("The status is only 'Forgot Password' or 'Verification Code'.")

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return fields_equal(response, gold, "input", "output", "exception")
