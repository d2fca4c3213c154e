import copy
from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2
from ..text import DATE, normalise_date


@LEVEL_1_2.register
class QueryRegistration(Tool):
    name = "QueryRegistration"
    description = "This API queries the registration of a patient, given patient ID."
    input_parameters = {
        "patient_name": {"type": "str", "description": "The name of patient."},
        "date": {"type": "str", "description": "The date of appointment. Format be like %Y-%m-%d"},
    }
    output_parameters = {
        "appointments": {
            "type": "list",
            "description": "The dict where from appointment_id to a list like [\"patient_name\":xxx, \"date\":xxx, \"doctor_name\":xxx]",
        }
    }
    database = "Appointments"

    def run(self, patient_name: Any, date: Any) -> dict[str, dict[str, Any]]:
        patient_name = patient_name.strip()
        day = normalise_date(date, DATE)
        if isinstance(day, ValueError):
            raise day
        found = {
            appointment_id: copy.deepcopy(appointment)
            for appointment_id, appointment in self.session.store("Appointments", writable=False).items()
            if appointment["patient_name"] == patient_name and normalise_date(appointment["date"], DATE) == day
        }
        if not found:
            raise ToolError("No appointments found.")
        return found

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        asked, expected = response["input"], gold["input"]
        if asked["patient_name"].strip() != expected["patient_name"].strip():
            return False
        if normalise_date(asked["date"], DATE) != normalise_date(expected["date"], DATE):
            return False
        return fields_equal(response, gold, "output", "exception")
