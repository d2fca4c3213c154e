"""Ctrl-C held back while a finished answer is being handed over and saved.

A ``KeyboardInterrupt`` is raised in the main thread between any two bytecodes, so one that lands just after
an answer left a queue, or halfway through writing its line, loses an answer that had come back. Inside
:class:`HeldInterrupt`, SIGINT only sets :attr:`HeldInterrupt.pending`; the holder checks it where stopping
loses nothing and calls :meth:`HeldInterrupt.raise_if_pending` (leaving the block raises it too). Outside the
main thread, where no signal handler can be set, SIGINT is not held: behaviour is as before.
"""

from __future__ import annotations

import signal
import threading
from types import TracebackType


class HeldInterrupt:
    def __init__(self) -> None:
        self.pending = False
        self._previous = None
        self._active = False

    def _hold(self, signum, frame) -> None:  # noqa: ARG002 (a signal handler's signature)
        self.pending = True

    def __enter__(self) -> HeldInterrupt:
        if threading.current_thread() is threading.main_thread():
            previous = signal.getsignal(signal.SIGINT)
            held_outside = isinstance(getattr(previous, "__self__", None), HeldInterrupt)  # the outer one decides
            if callable(previous) and not held_outside:  # a Python handler (the default raises KeyboardInterrupt)
                self._previous = previous
                signal.signal(signal.SIGINT, self._hold)
                self._active = True
        return self

    def raise_if_pending(self) -> None:
        if self.pending:
            self.pending = False
            raise KeyboardInterrupt

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._active:
            signal.signal(signal.SIGINT, self._previous)
            self._active = False
        if kind is None:
            self.raise_if_pending()
