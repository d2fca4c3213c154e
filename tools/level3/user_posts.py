from typing import Any

from ..registry import LEVEL_3
from ._common import Level3Tool, lookup

POSTS = {user_id: [3 * user_id - 2, 3 * user_id - 1, 3 * user_id] for user_id in range(1, 6)}


@LEVEL_3.register
class UserPosts(Level3Tool):
    name = "UserPosts"
    description = "API to retrieve the post IDs for a specific user."
    input_parameters = {"user_id": {"type": "int", "description": "User's ID."}}
    output_parameters = {"post_ids": {"type": "list", "description": "List of post IDs."}}

    def run(self, user_id: Any) -> dict[str, list[int]]:
        return {"post_ids": lookup(POSTS, user_id)}
