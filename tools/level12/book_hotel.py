"""BookHotel: order hotel rooms."""

from __future__ import annotations

from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..registry import LEVEL_1_2
from ..text import DATE, validate


@LEVEL_1_2.register
class BookHotel(Tool):
    """The availability test compares the date texts as given (zero-padded dates order correctly);
    like upstream it accepts a stay that strictly encloses an existing one and ignores room counts.
    """

    name = "BookHotel"
    description = "This API orders a hotel room. Two rooms are ordered if the number of adults is greater than 2. Only one order can be made at same time."
    input_parameters = {
        "hotel_name": {"type": "str", "description": "The name of the hotel."},
        "check_in_time": {"type": "str", "description": "The time to check in. Format: %Y-%m-%d"},
        "check_out_time": {"type": "str", "description": "The time to check out. Format: %Y-%m-%d"},
        "room_count": {"type": "int", "description": "The number of rooms to order."},
        "adult_count": {"type": "int", "description": "The number of adults."},
        "child_count": {"type": "int", "description": "The number of children."},
    }
    output_parameters = {
        "order_id": {"type": "str", "description": "The ID of the order."},
    }
    database = "Hotel"
    writes = ("Hotel",)

    def run(
        self,
        hotel_name: Any,
        check_in_time: Any,
        check_out_time: Any,
        room_count: Any,
        adult_count: Any,
        child_count: Any,
    ) -> str:
        validate(check_in_time, DATE)
        validate(check_out_time, DATE)
        if adult_count > 2 and room_count == 1:
            raise ToolError("The number of adults is greater than 2. Two rooms are ordered.")
        orders = self.session.store("Hotel")
        for order in orders.values():
            if order["hotel_name"] != hotel_name:
                continue
            booked_in, booked_out = order["check_in_time"], order["check_out_time"]
            if booked_in <= check_in_time < booked_out or booked_in < check_out_time <= booked_out:
                raise ToolError("The room is not available.")
        order_id = str(len(orders) + 1)
        orders[order_id] = {
            "hotel_name": hotel_name,
            "check_in_time": check_in_time,
            "check_out_time": check_out_time,
            "room_count": room_count,
            "adult_count": adult_count,
            "child_count": child_count,
        }
        return order_id

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return fields_equal(response, gold, "input", "output", "exception")
