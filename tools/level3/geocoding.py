from typing import Any

from ..registry import LEVEL_3
from ._common import Level3Tool, lookup

# Longitudes are all positive, as upstream stores them.
COORDINATES = {
    "New York City": {"latitude": 40.7128, "longitude": 74.0060},
    "San Francisco": {"latitude": 37.7749, "longitude": 122.4194},
    "London": {"latitude": 51.5074, "longitude": 0.1278},
    "Paris": {"latitude": 48.8566, "longitude": 2.3522},
    "Tokyo": {"latitude": 35.6762, "longitude": 139.6503},
}


@LEVEL_3.register
class Geocoding(Level3Tool):
    name = "Geocoding"
    description = "The API for converting an address or place name to geographical coordinates."
    input_parameters = {"address": {"type": "str", "description": "The address or place name to be converted."}}
    output_parameters = {
        "latitude": {"type": "float", "description": "The latitude of the location."},
        "longitude": {"type": "float", "description": "The longitude of the location."},
    }

    def run(self, address: Any) -> dict[str, float]:
        return lookup(COORDINATES, address)
