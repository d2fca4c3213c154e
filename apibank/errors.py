"""Errors that report a mistake the user can fix (an argument, a file, a folder), not a bug of the package.

Library code raises them like any exception; the console script prints one as a single line saying what
is wrong and what to do, and exits with status 2. Every other exception is a bug, or a failure of the
environment, and keeps its traceback. The message's first line is what the console script prints; a long
list the user may need (every missing file, say) goes into ``details``, which the console script writes
to a file instead of the terminal.
"""

from __future__ import annotations

from typing import Sequence


class UserError(Exception):
    """A mistake the user can fix; the message says what is wrong and what to do."""

    details: Sequence[str] = ()

    def with_details(self, details: Sequence[str]) -> "UserError":
        self.details = tuple(details)
        return self


class UsageError(UserError):
    """A command-line argument, or a combination of them, that cannot work."""


class OutputError(UserError):
    """An output folder that cannot be written, or whose files would be replaced without ``--overwrite``."""


class DataFolderError(UserError):
    """A data folder that is not (a complete copy of) the upstream API-Bank folder."""


class InputFileError(UserError, ValueError):
    """A file given as input (predictions, references, a chat template) that cannot be used as it is."""


class MissingExtra(UserError, ImportError):
    """A feature whose optional dependencies (an extra of the package) are not installed."""


class BrokenExtra(UserError, ImportError):
    """An optional dependency that is installed but does not import; the message says how to repair it."""


def require_extra(extra: str, modules: Sequence[str], what: str, *, otherwise: str | None = None) -> None:
    """Raise :class:`MissingExtra` naming ``extra`` when any of ``modules`` is not installed; ``otherwise``
    is another way to install them, said after the extra.

    Looked up without importing them, so the check costs nothing when they are there."""
    import sys
    from importlib.util import find_spec

    def installed(module: str) -> bool:
        if module in sys.modules:  # imported already (None: marked as not importable)
            return sys.modules[module] is not None
        try:
            return find_spec(module) is not None
        except (ImportError, ValueError):  # a parent package missing, or a module without a spec
            return False

    missing = [module for module in modules if not installed(module)]
    if missing:
        named = missing[0] if len(missing) == 1 else f"{', '.join(missing[:-1])} and {missing[-1]}"
        raise MissingExtra(f"{what} needs {named}: install the {extra} extra: "
                           f"pip install 'apibank[{extra}]'" + (f"; {otherwise}" if otherwise else ""))
