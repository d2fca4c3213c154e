import math
from typing import Any

from ..base import Record, ToolError, assert_same_api
from ..registry import LEVEL_3
from ._common import Level3Tool

# (threshold, rate): upstream applies the rate of the highest threshold reached to the WHOLE
# salary (a flat rate, not brackets), so the 40 % row only applies to an infinite salary.
RATES = ((0, 0.0), (1000, 0.1), (3000, 0.2), (5000, 0.3), (math.inf, 0.4))


@LEVEL_3.register
class TaxCalculator(Level3Tool):
    name = "TaxCalculator"
    description = "API for calculating tax deductions based on the given salary."
    input_parameters = {
        "salary": {"type": "float", "description": "The salary to calculate tax deductions for."}
    }
    output_parameters = {
        "salary_after_tax": {"type": "float", "description": "The salary after tax deductions."}
    }

    def run(self, salary: Any) -> dict[str, float]:
        reached = [rate for threshold, rate in RATES if threshold <= salary]
        if not reached:
            # Upstream fails here with an error whose text is empty (negative salaries).
            raise ToolError("")
        rate = reached[-1]
        return {"salary_after_tax": salary - salary * rate}

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        # ``output`` is subscripted unguarded: an errored prediction with the gold's salary raises
        # TypeError, which aborted the original run.
        assert_same_api(response, gold)
        return (
            response["input"]["salary"] == gold["input"]["salary"]
            and response["output"]["salary_after_tax"] == gold["output"]["salary_after_tax"]
            and response["exception"] == gold["exception"]
        )

    @classmethod
    def check_corrected(cls, response: Record, gold: Record) -> bool:
        try:
            return super().check_corrected(response, gold)
        except TypeError:
            return False
