from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..registry import LEVEL_3
from ..text import DATE, FULL, validate
from ._common import Level3Tool

if TYPE_CHECKING:
    from ..environment import Session

# (source, destination, day of the 12:00-15:00 flight)
FLIGHTS = (
    ("New York", "San Francisco", 1),
    ("Los Angeles", "San Francisco", 2),
    ("London", "San Francisco", 3),
    ("New York", "London", 4),
    ("New York", "Los Angeles", 5),
)


@LEVEL_3.register
class FlightSearch(Level3Tool):
    name = "FlightSearch"
    description = "API to retrieve flight options based on the destination and travel dates."
    input_parameters = {
        "source": {"type": "str", "description": "Source for the flight."},
        "destination": {"type": "str", "description": "Destination for the flight."},
        "travel_dates": {"type": "str", "description": "Travel dates. Format: %Y-%m-%d"},
    }
    output_parameters = {"flights": {"type": "list", "description": "List of available flight options."}}
    # A search turns the matched flights' dates into text in place (see ``run``): not state.
    incidental_records = ("flights",)

    def __init__(self, session: "Session") -> None:
        super().__init__(session)
        self.flights: list[dict[str, Any]] = [
            {
                "source": source,
                "destination": destination,
                "departure_date": datetime(2022, 1, day, 12, 0, 0),
                "arrival_date": datetime(2022, 1, day, 15, 0, 0),
            }
            for source, destination, day in FLIGHTS
        ]

    def run(self, source: Any, destination: Any, travel_dates: Any) -> dict[str, list[dict[str, Any]]]:
        wanted = validate(travel_dates, DATE).date()
        found = []
        for flight in self.flights:
            # Upstream turns a matched flight's dates into text in its own table, so matching the
            # same route again fails on ``.date()`` of a str (kept: it is the recorded behaviour).
            if (
                flight["source"] == source
                and flight["destination"] == destination
                and flight["departure_date"].date() == wanted
            ):
                flight["departure_date"] = flight["departure_date"].strftime(FULL)
                flight["arrival_date"] = flight["arrival_date"].strftime(FULL)
                found.append(dict(flight))
        return {"flights": found}
