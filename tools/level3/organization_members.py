from typing import Any

from ..registry import LEVEL_3
from ._common import Level3Tool, lookup

MEMBERS = {
    "Alibaba": ["John", "Mary", "Peter"],
    "Tencent": ["Tom", "Jerry"],
    "Baidu": ["Jack", "Rose"],
    "ByteDance": ["Bob", "Alice"],
    "JD": ["Mike", "Jane"],
}


@LEVEL_3.register
class OrganizationMembers(Level3Tool):
    name = "OrganizationMembers"
    description = "API to retrieve the list of members in the organization."
    input_parameters = {"organization": {"type": "str", "description": "Name of the organization."}}
    output_parameters = {"members": {"type": "list", "description": "List of organization members."}}

    def run(self, organization: Any) -> dict[str, list[str]]:
        return {"members": lookup(MEMBERS, organization)}
