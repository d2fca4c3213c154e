from typing import Any

from ..registry import LEVEL_3
from ._common import Level3Tool

MOVIES_BY_GENRE = {
    "Action": ("The Dark Knight", "The Matrix", "The Lord of the Rings"),
    "Comedy": ("The Hangover", "Knives Out", "Deadpool"),
    "Drama": ("The Shawshank Redemption", "Forrest Gump", "Joker"),
    "Romance": ("Titanic", "La La Land", "The Notebook"),
    "Thriller": ("Inception", "Parasite", "Get Out"),
}


@LEVEL_3.register
class MovieRecommendations(Level3Tool):
    name = "MovieRecommendations"
    description = (
        "The API for retrieving recommended movies based on user preferences and filtering watched movies."
    )
    input_parameters = {"preferences": {"type": "list", "description": "User's movie preferences."}}
    output_parameters = {
        "recommended_movies": {"type": "list", "description": "List of recommended movies."}
    }

    def run(self, preferences: Any) -> dict[str, list[str]]:
        # Nothing is filtered despite the description. A text argument (what the paper's parser
        # delivers) is walked character by character and fails on its first one, e.g. '['.
        movies: list[str] = []
        for genre in preferences:
            movies.extend(MOVIES_BY_GENRE[genre])
        return {"recommended_movies": movies}
