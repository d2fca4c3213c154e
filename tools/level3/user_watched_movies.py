from typing import Any

from ..base import ToolError
from ..registry import LEVEL_3
from ._common import Level3Tool

_ORDER_A = ("The Matrix", "The Lord of the Rings", "The Dark Knight")
_ORDER_B = ("The Lord of the Rings", "The Dark Knight", "The Matrix")
WATCHED = {"John": _ORDER_A, "Peter": _ORDER_A, "Jerry": _ORDER_A, "Mary": _ORDER_B, "Tom": _ORDER_B}


@LEVEL_3.register
class UserWatchedMovies(Level3Tool):
    name = "UserWatchedMovies"
    description = "API for retrieving a user's watched movie list."
    input_parameters = {"user_name": {"type": "str", "description": "Name of the user."}}
    output_parameters = {"watched_movies": {"type": "list", "description": "List of watched movies."}}

    def run(self, user_name: Any) -> list[str]:
        if user_name not in WATCHED:
            raise ToolError("User not found.")
        # The bare list, not the declared {"watched_movies": ...} mapping.
        return list(WATCHED[user_name])
