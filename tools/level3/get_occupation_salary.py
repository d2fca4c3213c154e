from typing import Any

from ..base import ToolError
from ..registry import LEVEL_3
from ._common import Level3Tool

SALARIES = {
    "Financial Analyst": 100000,
    "Software Engineer": 120000,
    "Data Scientist": 150000,
    "Product Manager": 130000,
    "Doctor": 200000,
}


@LEVEL_3.register
class GetOccupationSalary(Level3Tool):
    name = "GetOccupationSalary"
    description = "API for querying the salary of a given occupation."
    input_parameters = {"occupation": {"type": "str", "description": "The occupation to query."}}
    output_parameters = {"salary": {"type": "float", "description": "The salary of the given occupation."}}

    def run(self, occupation: Any) -> dict[str, int]:
        if occupation not in SALARIES:
            raise ToolError("The occupation is not in the database.")
        return {"salary": SALARIES[occupation]}
