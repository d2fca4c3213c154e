from typing import Any

from ..base import ToolError
from ..registry import LEVEL_3
from ._common import Level3Tool

LIKES = {post_id: 10 * post_id for post_id in range(1, 16)}


@LEVEL_3.register
class LikeCount(Level3Tool):
    name = "LikeCount"
    description = "API to retrieve the number of likes for a given post ID."
    input_parameters = {"post_id": {"type": "int", "description": "Post ID."}}
    output_parameters = {"like_count": {"type": "int", "description": "Number of likes for the post."}}

    def run(self, post_id: Any) -> dict[str, int]:
        if post_id not in LIKES:
            raise ToolError(f"Post with ID {post_id} does not exist.")
        return {"like_count": LIKES[post_id]}
