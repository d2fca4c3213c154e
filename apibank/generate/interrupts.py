"""Ctrl-C and SIGTERM: held back while a finished answer is being handed over and saved, and told apart.

A ``KeyboardInterrupt`` is raised in the main thread between any two bytecodes, so one that lands just after
an answer left a queue, or halfway through writing its line, loses an answer that had come back. Inside
:class:`HeldInterrupt`, SIGINT (and SIGTERM, where :func:`sigterm_as_interrupt` made it an interrupt) only sets
:attr:`HeldInterrupt.pending`; the holder checks it where stopping loses nothing and calls
:meth:`HeldInterrupt.raise_if_pending` (leaving the block raises it too). Outside the main thread, where no
signal handler can be set, nothing is held: behaviour is as before.

SIGTERM (``kill``, a job scheduler, ``docker stop``) behaves as Ctrl-C: :func:`sigterm_as_interrupt` raises
:class:`Terminated`, a ``KeyboardInterrupt``, so the same code saves the same work and says so; the exit status
is 143 (128 + 15) instead of Ctrl-C's 130 (:func:`exit_status`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from types import TracebackType
from typing import Iterator

HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM, taken as Ctrl-C."""


def exit_status(interrupt: BaseException) -> int:
    """130 for Ctrl-C, 143 for SIGTERM: 128 plus the signal's number, as a shell reports them."""
    return 128 + (signal.SIGTERM if isinstance(interrupt, Terminated) else signal.SIGINT)


def what_happened(interrupt: BaseException) -> str:
    return "terminated (SIGTERM)" if isinstance(interrupt, Terminated) else "interrupted"


def _terminate(signum, frame) -> None:  # noqa: ARG001 (a signal handler's signature)
    raise Terminated


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread (elsewhere: unchanged)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class HeldInterrupt:
    def __init__(self) -> None:
        self.pending = False
        self._signal: int | None = None
        self._previous: dict[int, object] = {}

    def _hold(self, signum, frame) -> None:  # noqa: ARG002 (a signal handler's signature)
        self.pending = True
        if self._signal != signal.SIGTERM:  # a termination outranks a Ctrl-C
            self._signal = signum

    def __enter__(self) -> HeldInterrupt:
        if threading.current_thread() is threading.main_thread():
            for signum in HELD_SIGNALS:
                previous = signal.getsignal(signum)
                held_outside = isinstance(getattr(previous, "__self__", None), HeldInterrupt)  # the outer one decides
                if callable(previous) and not held_outside:  # a Python handler (the default raises KeyboardInterrupt)
                    self._previous[signum] = previous
                    signal.signal(signum, self._hold)
        return self

    def raise_if_pending(self) -> None:
        if self.pending:
            self.pending = False
            terminated, self._signal = self._signal == signal.SIGTERM, None
            raise Terminated if terminated else KeyboardInterrupt

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous = {}
        if kind is None:
            self.raise_if_pending()
