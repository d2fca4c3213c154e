from typing import Any

from ..base import Record, assert_same_api
from ..registry import LEVEL_3
from ._common import Level3Tool

RESTAURANTS = (
    ((40.7128, 74.0060), "Restaurant A"),
    ((37.7749, 122.4194), "Restaurant B"),
    ((40.7128, 74.0060), "Restaurant C"),
    ((37.7749, 122.4194), "Restaurant D"),
)


@LEVEL_3.register
class NearbyRestaurants(Level3Tool):
    name = "NearbyRestaurants"
    description = "Retrieves nearby restaurants based on the provided coordinates and search parameters."
    input_parameters = {
        "latitude": {"type": "float", "description": "Latitude of the location."},
        "longitude": {"type": "float", "description": "Longitude of the location."},
        "distance": {
            "type": "int",
            "description": "The distance in meters from the location to search for restaurants.",
        },
    }
    output_parameters = {"restaurants": {"type": "list", "description": "A list of nearby restaurants."}}

    def run(self, latitude: Any, longitude: Any, distance: Any) -> dict[str, list[dict[str, Any]]]:
        # Upstream ignores its arguments. It holds each pair as a tuple; we return lists, which is
        # what every recorded envelope holds (JSON arrays), so results equal the gold as values.
        # No check reads this output, so no verdict depends on the difference.
        return {"restaurants": [{"coordinates": list(place), "name": name} for place, name in RESTAURANTS]}

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        assert_same_api(response, gold)
        return response["input"] == gold["input"]
