from typing import Any

from ..registry import LEVEL_3
from ._common import Level3Tool, lookup

PREFERENCES = {
    "John": ["Action", "Comedy", "Drama"],
    "Mary": ["Comedy", "Drama", "Romance"],
    "Peter": ["Action", "Drama", "Thriller"],
    "Tom": ["Action", "Comedy", "Drama"],
    "Jerry": ["Comedy", "Drama", "Romance"],
}


@LEVEL_3.register
class UserMoviePreferences(Level3Tool):
    name = "UserMoviePreferences"
    description = "API for retrieving user preferences for movie recommendations."
    input_parameters = {"user_name": {"type": "str", "description": "Name of the user."}}
    output_parameters = {"preferences": {"type": "list", "description": "List of movie preferences."}}

    def run(self, user_name: Any) -> dict[str, list[str]]:
        return {"preferences": lookup(PREFERENCES, user_name)}
