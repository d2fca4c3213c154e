"""Parameters renamed in the tools after the dialogues were annotated, and the one place that applies them.

The recorded gold calls still use the old names (TimedSwitch and CancelTimedSwitch took ``device_id``
where the tools now take ``name``). The judges and the agentic episodes map them through here.
"""

from __future__ import annotations

import copy
from typing import Any

from apibank_tools.base import Record

RENAMED_PARAMETERS: dict[str, dict[str, str]] = {
    "TimedSwitch": {"device_id": "name"},
    "CancelTimedSwitch": {"device_id": "name"},
}


def renamed(tool_name: str, arguments: Any) -> dict[str, Any]:
    """A copy of ``arguments`` with each renamed parameter under its current name, in its place.

    An old name stays as it is when the new one is also given; anything but a dict gives ``{}``.
    """
    if not isinstance(arguments, dict):
        return {}
    renames = RENAMED_PARAMETERS.get(tool_name)
    if not renames:
        return dict(arguments)
    result = {}
    for key, value in arguments.items():
        new = renames.get(key)
        if new is not None and new not in arguments:
            result[new] = value
        else:
            result[key] = value
    return result


def renamed_record(tool_name: str, record: Record) -> Record:
    """The recorded result with renamed parameters in its ``input`` (a copy when anything is renamed)."""
    if tool_name in RENAMED_PARAMETERS and isinstance(record.get("input"), dict):
        copied = copy.deepcopy(record)
        copied["input"] = renamed(tool_name, copied["input"])
        return copied
    return record
