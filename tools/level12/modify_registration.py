from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2
from ..text import DATE, normalise_date


@LEVEL_1_2.register
class ModifyRegistration(Tool):
    name = "ModifyRegistration"
    description = "This API modifies the registration of a patient given appointment ID."
    input_parameters = {
        "appointment_id": {"type": "str", "description": "The ID of appointment."},
        "new_appointment_date": {"type": "str", "description": "The new appointment date. Format: %Y-%m-%d."},
        "new_appointment_doctor": {"type": "str", "description": "The new appointment doctor."},
    }
    output_parameters = {"status": {"type": "str", "description": "The status of modification."}}
    database = "Appointments"
    writes = ("Appointments",)
    defaults = {"new_appointment_date": None, "new_appointment_doctor": None}

    def run(self, appointment_id: Any, new_appointment_date: Any, new_appointment_doctor: Any) -> str:
        appointment_id = appointment_id.strip()
        appointments = self.session.store("Appointments", writable=True)
        if appointment_id not in appointments:
            raise ToolError("The appointment ID does not exist.")
        date = None if new_appointment_date is None else normalise_date(new_appointment_date, DATE)
        doctor = None
        if new_appointment_doctor is not None:
            doctor = new_appointment_doctor.strip()
            if doctor == "":
                raise ToolError("Fail because the doctor name is empty.")
        if isinstance(date, ValueError):
            raise date
        record = appointments[appointment_id]
        if date is None and doctor is None:
            raise ToolError("Fail because no modification is made.")
        if date is None:
            if doctor == record["doctor_name"]:
                raise ToolError("Fail because doctor is not changed.")
            record["doctor_name"] = doctor
        elif doctor is None:
            if date == record["date"]:
                raise ToolError("Fail because date is not changed.")
            record["date"] = date
        else:
            same_date, same_doctor = date == record["date"], doctor == record["doctor_name"]
            if same_date and same_doctor:
                raise ToolError("Fail because no modification is made.")
            if same_date:
                raise ToolError("Fail because date is not changed.")
            if same_doctor:
                raise ToolError("Fail because doctor is not changed.")
            record["date"], record["doctor_name"] = date, doctor
        return "success"

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        asked, expected = response["input"], gold["input"]
        if str(asked["appointment_id"]).strip() != expected["appointment_id"].strip():
            return False
        dates = [d if d is None else normalise_date(d, DATE) for d in (asked["new_appointment_date"], expected["new_appointment_date"])]
        if dates[0] != dates[1]:
            return False
        doctors = [d if d is None else d.strip() for d in (asked["new_appointment_doctor"], expected["new_appointment_doctor"])]
        if doctors[0] != doctors[1]:
            return False
        return fields_equal(response, gold, "output", "exception")
