"""The system message of an episode (the same for our CLI and the inspect-ai task)."""

from __future__ import annotations

from apibank.agent.environment import offered_at_start
from apibank.benchmark import SEARCHER
from apibank.data.episodes import Episode

BASE = (
    "You are an assistant that helps the user by calling tools. Call a tool when you need information "
    "or need to change something for the user; you receive each tool's result. When you are done with "
    "the user's request, answer the user in plain text without calling a tool."
)
SEARCH = (
    f" Only {SEARCHER} is available at first: call it with keywords describing what you need, and the "
    "tools it finds become available to call."
)
TODAY = " Today is 2023-03-31."


def system_prompt(episode: Episode, setting: str) -> str:
    text = BASE
    if offered_at_start(episode, setting) == [SEARCHER]:
        text += SEARCH
    return text
