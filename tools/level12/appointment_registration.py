"""AppointmentRegistration: register a hospital appointment."""

from __future__ import annotations

from typing import Any

from ..base import Record, Tool, ToolError
from ..registry import LEVEL_1_2
from ..text import DATE, normalise_date


@LEVEL_1_2.register
class AppointmentRegistration(Tool):
    """The new appointment id is random, as upstream's is, but drawn from the session's seeded
    generator, so a session's ids are reproducible. Upstream's recorded ids cannot be: replaying a
    gold call re-keys the new appointment under the recorded id (:meth:`adopt`), so that later calls
    of the same dialogue (QueryRegistration, CancelRegistration) find it.
    """

    name = "AppointmentRegistration"
    description = "This API registers an appointment of hospital."
    input_parameters = {
        "patient_name": {"type": "str", "description": "The name of patient."},
        "date": {"type": "str", "description": "The date of appointment. Format be like %Y-%m-%d"},
        "doctor_name": {"type": "str", "description": "The name of appointed doctor."},
    }
    output_parameters = {
        "appointment_id": {"type": "str", "description": "The ID of appointment."},
    }
    database = "Appointments"
    writes = ("Appointments",)
    generates_random_values = True

    def run(self, patient_name: Any, date: Any, doctor_name: Any) -> str:
        patient = patient_name.strip()
        doctor = doctor_name.strip()
        if patient == "" or doctor == "":
            raise ToolError("Patient name or doctor name cannot be empty.")
        day = normalise_date(date, DATE)
        if isinstance(day, ValueError):
            raise day
        appointments = self.session.store("Appointments")
        for record in appointments.values():
            if record["patient_name"] == patient and normalise_date(record["date"], DATE) == day:
                if record["doctor_name"] == doctor:
                    raise ToolError("This appointment has already been registered.")
                raise ToolError("This patient has already been registered in this day.")
        appointment_id = self._draw_id(appointments)
        appointments[appointment_id] = {"patient_name": patient, "date": day, "doctor_name": doctor}
        return appointment_id

    def _draw_id(self, appointments: dict[str, Any]) -> str:
        while True:
            candidate = str(self.session.rng.randint(10000000, 99999999))
            if candidate not in appointments:
                return candidate

    def adopt(self, executed: Record, recorded: Record) -> None:
        new_id, recorded_id = executed.get("output"), recorded.get("output")
        if executed.get("exception") is not None or recorded.get("exception") is not None:
            return
        if not isinstance(new_id, str) or not isinstance(recorded_id, str) or new_id == recorded_id:
            return
        appointments = self.session.store("Appointments")
        if new_id not in appointments or recorded_id in appointments:
            return
        appointments[recorded_id] = appointments.pop(new_id)

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        """The appointment id (the output) is not compared; only a success against a failure is."""
        said, meant = response["input"], gold["input"]
        if said["patient_name"].strip() != meant["patient_name"].strip():
            return False
        if normalise_date(said["date"], DATE) != normalise_date(meant["date"], DATE):
            return False
        if said["doctor_name"].strip() != meant["doctor_name"].strip():
            return False
        if gold["output"] is None and response["output"] is not None:
            return False
        return response["exception"] == gold["exception"]
