"""apibank_tools: the executable API-Bank tool environment, and nothing else.

The 73 tools (53 level-1/2, 22 level-3 registrations), their registries, per-sample sessions over
pristine databases, argument coercion and the ToolSearcher retrieval. The benchmark built on it
(data download, rows, judging, scoring, generation, Hub files, CLI) is the ``apibank`` package,
which imports this one; this package never imports ``apibank``.

The source folder is ``tools/`` in the repository; it installs under the distinct name
``apibank_tools`` so that it never collides with other distributions' ``tools`` packages.
"""

from .base import CallRejected, CallTimeout, Tool, ToolError
from .data import DataSource, LocalFolder
from .environment import PristineData, Session, new_session, pristine_data
from .registry import LEVEL_1_2, LEVEL_3, TOOLSETS, ToolSet, toolset

__version__ = "0.1.0"

__all__ = [
    "CallRejected",
    "CallTimeout",
    "DataSource",
    "LocalFolder",
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
