"""apibank_tools: the API-Bank tool environment, judging and data access.

The source folder is ``tools/`` in the repository; it installs under the distinct name
``apibank_tools`` so that it never collides with other distributions' ``tools`` packages.
"""

from .base import CallRejected, CallTimeout, Tool, ToolError
from .environment import PristineData, Session, new_session, pristine_data
from .registry import LEVEL_1_2, LEVEL_3, TOOLSETS, ToolSet, toolset

__version__ = "0.1.0"

__all__ = [
    "CallRejected",
    "CallTimeout",
    "LEVEL_1_2",
    "LEVEL_3",
    "PristineData",
    "Session",
    "TOOLSETS",
    "Tool",
    "ToolError",
    "ToolSet",
    "new_session",
    "pristine_data",
    "toolset",
    "__version__",
]
