from typing import Any

from ..base import CallRejected, Record, fields_equal
from ..registry import LEVEL_3
from ._common import Level3Tool, fresh

WEATHER = {
    (40.7128, 74.0060): {"temperature": 10, "humidity": 0.5, "description": "Clear"},
    (37.7749, 122.4194): {"temperature": 20, "humidity": 0.8, "description": "Cloudy"},
    (51.5074, 0.1278): {"temperature": 5, "humidity": 0.9, "description": "Rainy"},
    (48.8566, 2.3522): {"temperature": 15, "humidity": 0.7, "description": "Sunny"},
    (35.6762, 139.6503): {"temperature": 25, "humidity": 0.6, "description": "Rainy"},
}

# Upstream subscripts the failed lookup outside its own error handler, so this TypeError never
# reaches an envelope: the original level-3 evaluator catches it and counts an execution error.
UNKNOWN_COORDINATES = "'NoneType' object is not subscriptable"


@LEVEL_3.register
class GetWeatherForCoordinates(Level3Tool):
    name = "GetWeatherForCoordinates"
    description = "Retrieves current weather information based on the provided coordinates."
    input_parameters = {
        "latitude": {"type": "float", "description": "Latitude of the location."},
        "longitude": {"type": "float", "description": "Longitude of the location."},
    }
    output_parameters = {
        "temperature": {"type": "float", "description": "Current temperature in Celsius."},
        "humidity": {"type": "float", "description": "Current humidity level."},
        "description": {"type": "str", "description": "Weather description."},
    }

    def execute(self, arguments: dict[str, Any]) -> Record:
        if "latitude" in arguments and "longitude" in arguments:
            try:
                known = WEATHER.get((arguments["latitude"], arguments["longitude"])) is not None
            except TypeError as error:  # unhashable values: equally uncaught upstream
                raise CallRejected("invalid_value", str(error), "latitude", raised=TypeError) from error
            if not known:
                raise CallRejected("invalid_value", UNKNOWN_COORDINATES, "latitude", raised=TypeError)
        return super().execute(arguments)

    def run(self, latitude: Any, longitude: Any) -> dict[str, Any]:
        return fresh(WEATHER[(latitude, longitude)])

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return fields_equal(response, gold, "output", "exception", "input")
