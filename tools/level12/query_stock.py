from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2
from ..text import DATE, normalise_date


@LEVEL_1_2.register
class QueryStock(Tool):
    name = "QueryStock"
    description = "This API queries the stock price of a given stock code and date."
    input_parameters = {
        "stock_code": {"type": "str", "description": "The stock code of the given stock."},
        "date": {"type": "str", "description": "The date of the stock price. Format: %Y-%m-%d"},
    }
    output_parameters = {"stock_price": {"type": "float", "description": "The stock price of the given stock."}}
    database = "Stock"

    def run(self, stock_code: Any, date: Any) -> Any:
        code = stock_code.upper().strip()
        if code == "":
            raise ToolError("The stock code cannot be empty.")
        day = normalise_date(date, DATE)
        if isinstance(day, ValueError):
            raise day
        stocks = self.session.store("Stock", writable=False)
        if code not in stocks:
            raise ToolError("The stock code does not exist.")
        if day not in stocks[code]:
            raise ToolError("The stock price of this date is not maintained.")
        # Returned as stored: an integral JSON price stays an int.
        return stocks[code][day]

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        asked, expected = response["input"], gold["input"]
        if asked["stock_code"].upper().strip() != expected["stock_code"].upper().strip():
            return False
        if normalise_date(asked["date"], DATE) != normalise_date(expected["date"], DATE):
            return False
        return fields_equal(response, gold, "output", "exception")
