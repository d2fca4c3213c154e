from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..base import Record, assert_same_api
from ..registry import LEVEL_3
from ..text import DATE, validate
from ._common import Level3Tool

if TYPE_CHECKING:
    from ..environment import Session

# hotel_1 .. hotel_5, all in San Francisco, one night each from 2022-01-01 on
HOTEL_NIGHTS = (1, 2, 3, 4, 5)


@LEVEL_3.register
class HotelAvailability(Level3Tool):
    name = "HotelAvailability"
    description = "API for checking hotel availability based on the destination and travel dates."
    input_parameters = {
        "destination": {"type": "str", "description": "Destination for hotel search."},
        "check_in_date": {"type": "str", "description": "Check-in date. Format: %Y-%m-%d"},
        "check_out_date": {"type": "str", "description": "Check-out date. Format: %Y-%m-%d"},
    }
    output_parameters = {"hotels": {"type": "list", "description": "List of available hotels."}}
    # A search turns the matched hotels' dates into text in place (see ``run``): not state.
    incidental_records = ("hotels",)

    def __init__(self, session: "Session") -> None:
        super().__init__(session)
        # Each hotel: its availability window (never changes) and the record reported to callers,
        # whose dates upstream rewrites to text in place on the first match.
        self.hotels: list[tuple[datetime, datetime, dict[str, Any]]] = []
        for night in HOTEL_NIGHTS:
            check_in, check_out = datetime(2022, 1, night), datetime(2022, 1, night + 1)
            record = {"destination": "San Francisco", "check_in_date": check_in, "check_out_date": check_out}
            self.hotels.append((check_in, check_out, record))

    def run(self, destination: Any, check_in_date: Any, check_out_date: Any) -> dict[str, list[dict[str, Any]]]:
        arrival = validate(check_in_date, DATE)
        departure = validate(check_out_date, DATE)
        found = []
        for opens, closes, record in self.hotels:
            # No arrival-before-departure test, as upstream.
            if record["destination"] == destination and arrival >= opens and departure <= closes:
                # A hotel matched before holds text by now: ``'str' object has no attribute 'strftime'``.
                record["check_in_date"] = record["check_in_date"].strftime(DATE)
                record["check_out_date"] = record["check_out_date"].strftime(DATE)
                found.append(dict(record))
        return {"hotels": found}

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        # Upstream ignores ``exception`` and subscripts ``output`` unguarded: an errored prediction
        # with the gold's input raises TypeError, which aborted the original run.
        assert_same_api(response, gold)
        return (
            response["input"]["destination"] == gold["input"]["destination"]
            and response["input"]["check_in_date"] == gold["input"]["check_in_date"]
            and response["input"]["check_out_date"] == gold["input"]["check_out_date"]
            and response["output"]["hotels"] == gold["output"]["hotels"]
        )

    @classmethod
    def check_corrected(cls, response: Record, gold: Record) -> bool:
        try:
            return super().check_corrected(response, gold)
        except TypeError:
            return False
