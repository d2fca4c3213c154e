"""The per-protocol category maps that the judge's one exception ladder reads."""

from __future__ import annotations

import pytest
from apibank_tools.base import CallRejected

from apibank.judge import categories as c

MAPS = {"paper": c.PAPER_CATEGORIES, "paper-level-3": c.PAPER_LEVEL_3_CATEGORIES, "corrected": c.CORRECTED_CATEGORIES}


@pytest.mark.parametrize(
    "protocol,kind,raised,expected",
    [
        ("paper", "unknown_tool", None, c.API_NAME_MISMATCH),
        ("paper", "invalid_parameter_type", None, c.ABORT_INVALID_PARAMETER_TYPE),
        ("paper", "invalid_value", TypeError, c.ABORT_INVALID_VALUE),  # level 1/2 aborts on any of them
        ("paper-level-3", "unknown_tool", None, c.UNKNOWN_API),
        ("paper-level-3", "invalid_parameter_type", None, c.INVALID_INPUT_PARAMETER),
        ("paper-level-3", "invalid_value", TypeError, c.EXECUTION_TYPE_ERROR),
        ("paper-level-3", "invalid_value", ValueError, c.ABORT_INVALID_VALUE),
        ("corrected", "invalid_parameter_type", None, c.INVALID_INPUT_TYPE),
        ("corrected", "invalid_value", TypeError, c.INVALID_INPUT_VALUE),
        ("corrected", "missing_argument", None, c.MISS_INPUT_ARGUMENT),
    ],
)
def test_rejections(protocol, kind, raised, expected):
    assert MAPS[protocol].rejected(CallRejected(kind, "text", raised=raised)) == expected


@pytest.mark.parametrize(
    "protocol,error,expected",
    [
        ("paper", KeyError("time"), c.KEY_ERROR),
        ("paper", AssertionError("The API name is not correct."), c.API_NAME_MISMATCH),
        ("paper", AssertionError("invalid parameter name. parameter: x"), c.INVALID_INPUT_PARAMETER),
        ("paper", AssertionError("anything else"), c.ABORT_CHECK_ERROR),
        ("paper", TypeError("call() missing 1 required positional argument: 'x'"), c.MISS_INPUT_ARGUMENT),
        ("paper", TypeError("unhashable type: 'list'"), c.ABORT_CHECK_ERROR),
        ("paper-level-3", AssertionError("The API name is not correct."), c.API_NAME_MISMATCH),
        ("paper-level-3", KeyError("content"), c.KEY_ERROR),
        ("paper-level-3", ValueError("x"), c.ABORT_CHECK_ERROR),
        ("corrected", KeyError("x"), c.ABORT_CHECK_ERROR),
    ],
)
def test_check_errors(protocol, error, expected):
    assert MAPS[protocol].check_failed(error) == expected


def test_every_category_is_described():
    produced = {category for m in MAPS.values() for category in m.rejections.values()}
    produced |= {m.other_rejection for m in MAPS.values()} | {m.type_error_rejection for m in MAPS.values()} - {None}
    produced |= {rule.category for m in MAPS.values() for rule in m.check_errors}
    assert produced <= set(c.CATEGORY_DESCRIPTIONS)
    assert c.EXECUTION_CATEGORIES <= set(c.CATEGORY_DESCRIPTIONS)
    # the last rule of every map catches whatever the others leave
    assert all(m.check_errors[-1].error is Exception and not m.check_errors[-1].text for m in MAPS.values())
