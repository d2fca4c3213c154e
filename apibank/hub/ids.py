"""Checks on Hub repository ids given on the command line: a clear error before any work is done."""

from __future__ import annotations

import re

from apibank.errors import UsageError

# What the Hub accepts for a namespace and a repository name (huggingface_hub's validate_repo_id
# rules, plus the namespace the Hub requires for a dataset a leaderboard can live in).
_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
_REPO_ID = re.compile(rf"{_PART}/{_PART}")


class HubIdError(UsageError, ValueError):
    """A string that cannot be a Hub repository id."""


def check_repo_id(value: str | None, what: str = "repository id") -> str:
    """``value`` if it reads ``namespace/name`` as the Hub requires; else :class:`HubIdError` saying why."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    if not value:
        raise HubIdError(f"{what} is missing; give it as NAMESPACE/NAME")
    if value.count("/") != 1 or not _REPO_ID.fullmatch(value):
        raise HubIdError(
            f"{what} {value!r} is not a Hub id: expected NAMESPACE/NAME, each part letters, digits, '-', '_' "
            "or '.', starting and ending with a letter or digit, at most 96 characters"
        )
    if "--" in value or ".." in value or value.endswith(".git"):
        raise HubIdError(f"{what} {value!r} is not a Hub id: '--', '..' and a '.git' ending are not allowed")
    try:
        validate_repo_id(value)
    except HFValidationError as error:
        raise HubIdError(f"{what} {value!r} is not a Hub id: {error}") from None
    return value
