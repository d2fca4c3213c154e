from typing import Any

from ..registry import LEVEL_3
from ._common import Level3Tool

MEMBERS_BY_STATUS = {
    "Traveling": ("John", "Tom", "Bob"),
    "Working from home": ("Mary", "Jerry", "Alice"),
    "Working from office": ("Peter", "Jack", "Rose", "Mike", "Jane"),
}
STATUS_OF = {member: status for status, members in MEMBERS_BY_STATUS.items() for member in members}


@LEVEL_3.register
class TravelStatus(Level3Tool):
    name = "TravelStatus"
    description = "API for retrieving the current travel status of each member."
    input_parameters = {"member_name": {"type": "str", "description": "Name of the member."}}
    output_parameters = {"status": {"type": "str", "description": "Travel status"}}

    def run(self, member_name: Any) -> str:
        # The bare status text, not the declared {"status": ...} mapping.
        return STATUS_OF[member_name]
