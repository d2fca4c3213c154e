from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2
from ..text import DATE, validate
from ._dates import pad_year

MONTH_DAY = "%m-%d"


def month_day(text: str) -> str | ValueError:
    """``MM-DD`` from a full date or a month-day text; on failure the month-day parse error."""
    padded = pad_year(text)
    try:
        return validate(padded, DATE).strftime(MONTH_DAY)
    except ValueError:
        pass
    try:
        return validate(padded, MONTH_DAY).strftime(MONTH_DAY)
    except ValueError as error:
        return error


@LEVEL_1_2.register
class QueryHistoryToday(Tool):
    name = "QueryHistoryToday"
    description = "This API queries the history of the given date."
    input_parameters = {"date": {"type": "str", "description": "The date of the history. Format: %m-%d"}}
    output_parameters = {"history": {"type": "list", "description": "The history of the user today."}}
    database = "History"

    def run(self, date: Any) -> list[str]:
        key = month_day(date)
        if isinstance(key, ValueError):
            raise key
        history = self.session.store("History", writable=False)
        if key not in history:
            raise ToolError("The date is not in the database.")
        return [
            f"Title: {event['Title'].strip()}, Date: {event['Date'].strip()}, Description: {event['Description'].strip()}"
            for event in history[key]
        ]

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        if month_day(response["input"]["date"]) != month_day(gold["input"]["date"]):
            return False
        return fields_equal(response, gold, "output", "exception")
