"""CancelRegistration: cancel a hospital appointment by id."""

from __future__ import annotations

from typing import Any

from ..base import Record, Tool, ToolError
from ..registry import LEVEL_1_2


@LEVEL_1_2.register
class CancelRegistration(Tool):
    name = "CancelRegistration"
    description = "This API cancels the registration of a patient given appointment ID."
    input_parameters = {
        "appointment_id": {"type": "str", "description": "The ID of appointment."},
    }
    output_parameters = {
        "status": {"type": "str", "description": "The status of cancellation."},
    }
    database = "Appointments"
    writes = ("Appointments",)

    def run(self, appointment_id: Any) -> str:
        key = appointment_id.strip()
        appointments = self.session.store("Appointments")
        if key not in appointments:
            raise ToolError("The appointment ID is incorrect.")
        del appointments[key]
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return (
            response["input"]["appointment_id"].strip() == gold["input"]["appointment_id"].strip()
            and response["output"] == gold["output"]
            and response["exception"] == gold["exception"]
        )
