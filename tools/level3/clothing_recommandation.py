from typing import Any

from ..registry import LEVEL_3
from ._common import Level3Tool


@LEVEL_3.register
class ClothingRecommendation(Level3Tool):
    name = "ClothingRecommendation"
    description = "API for providing clothing recommendations based on weather conditions."
    input_parameters = {
        "temperature": {"type": "float", "description": "Temperature in Celsius."},
        "humidity": {"type": "float", "description": "Relative humidity in percentage."},
        "weather_conditions": {"type": "str", "description": "Description of weather conditions."},
    }
    output_parameters = {
        "clothing_options": {"type": "list", "description": "List of recommended clothing options."}
    }

    def run(self, temperature: Any, humidity: Any, weather_conditions: Any) -> dict[str, list[str]]:
        options: list[str] = []
        if temperature < 10:
            options += ["Warm coat", "Hat", "Gloves"]
        if 10 <= temperature < 20:
            options += ["Light jacket", "Long-sleeved shirt"]
        if 20 <= temperature < 30:
            options += ["T-shirt", "Shorts"]
        if temperature >= 30:
            options += ["Sun hat", "Sunglasses", "Loose-fitting clothes"]
        # A percentage threshold, while GetWeatherForCoordinates reports a fraction: never fires there.
        if humidity > 70:
            options += ["Umbrella", "Waterproof shoes"]
        if "rain" in weather_conditions.lower():
            options.append("Raincoat")
        return {"clothing_options": options}
