"""Per-sample tool environments over pristine databases loaded once per process.

``PristineData`` holds the parsed ``init_database/*.json`` files; nothing ever writes to it. A
``Session`` is one sample's world: its own tool instances, its own copy of each database it writes
(copied on first write access), its own seeded random generator. Sessions never share mutable
state, so nothing one sample does is visible to another.

Execution modes the metric needs:

* fresh state per call (the original evaluator): a new ``Session`` per judged call;
* replay: ``Session.replay`` runs a dialogue's earlier gold calls first, then the predicted call.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import random
import signal
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

from .base import CallTimeout, Record, Tool
from .coercion import COERCERS
from .data import DataSource, as_source
from .registry import ToolSet, toolset

DEFAULT_CALL_TIMEOUT = 10.0


class PristineData:
    """The initial tool databases of one data source, read once and never modified."""

    def __init__(self, source: DataSource | str | os.PathLike[str] | None = None) -> None:
        self.source = as_source(source)
        self._stores: dict[str, Any] = {}
        self._lock = threading.Lock()

    def database_names(self) -> list[str]:
        return [Path(p).stem for p in self.source.paths("init_database", ".json")]

    def store(self, name: str) -> Any:
        """The pristine content of ``init_database/<name>.json``. Callers must not modify it."""
        try:
            return self._stores[name]
        except KeyError:
            pass
        with self._lock:
            if name not in self._stores:
                self._stores[name] = json.loads(self.source.read_text(f"init_database/{name}.json"))
        return self._stores[name]

    def preload(self) -> "PristineData":
        for name in self.database_names():
            self.store(name)
        return self


_shared: dict[str, PristineData] = {}
_shared_lock = threading.Lock()


def pristine_data(source: DataSource | str | os.PathLike[str] | None = None) -> PristineData:
    """The process-wide pristine data of a source (a ``DataSource``, a folder, or ``$APIBANK_DATA_DIR``)."""
    resolved = as_source(source)
    with _shared_lock:
        data = _shared.get(resolved.key)
        if data is None:
            data = _shared[resolved.key] = PristineData(resolved)
        return data


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise CallTimeout in the calling code after ``seconds`` (main thread on POSIX only).

    A convenience for using the tools directly; it cannot interrupt work in C and is skipped outside
    the main thread, for non-finite limits, and when the caller's own real-time timer would fire
    first. Otherwise the caller's SIGALRM handler and the rest of its timer are restored afterwards.
    Hard bounds belong to the benchmark's judging worker process (``apibank.judge.worker``).
    """
    usable = (
        seconds is not None
        and 0 < seconds < float("inf")
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if usable:
        pending, _ = signal.getitimer(signal.ITIMER_REAL)
        usable = not (0 < pending <= seconds)
    if not usable:
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise CallTimeout(f"the call exceeded its time limit of {seconds} s")

    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, on_alarm)
    caller_delay, caller_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if caller_delay > 0:
            left = caller_delay - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-6), caller_interval)


class Session:
    """One sample's tool world."""

    def __init__(
        self,
        tools: ToolSet | str,
        data: PristineData | None = None,
        *,
        seed: int = 0,
        retriever: Any = None,
        timeout: float | None = DEFAULT_CALL_TIMEOUT,
    ) -> None:
        self.toolset = toolset(tools) if isinstance(tools, str) else tools
        self.data = data if data is not None else pristine_data()
        self.rng = random.Random(seed)
        self.timeout = timeout
        self._retriever = retriever
        self._stores: dict[str, Any] = {}
        self._instances: dict[str, Tool] = {}

    # ------------------------------------------------------------------ state
    def store(self, name: str, *, writable: bool = True) -> Any:
        """This session's view of a database: a private copy once anything may write to it."""
        if name in self._stores:
            return self._stores[name]
        if not writable:
            return self.data.store(name)
        private = copy.deepcopy(self.data.store(name))
        self._stores[name] = private
        return private

    def written_stores(self) -> dict[str, Any]:
        """The databases this session holds a private (possibly modified) copy of, by name."""
        return dict(self._stores)

    def tool_instances(self) -> dict[str, Tool]:
        """The tool instances created so far in this session (some keep in-memory records)."""
        return dict(self._instances)

    def resolve_token(self, token: Any) -> str:
        """The username owning ``token`` (first account in file order), as CheckToken does."""
        for username, account in self.store("Account", writable=False).items():
            if account["token"] == token:
                return username
        from .base import ToolError

        raise ToolError("The token is invalid.")

    @property
    def retriever(self) -> Any:
        if self._retriever is None:
            from .retrieval import default_retriever

            self._retriever = default_retriever()
        return self._retriever

    def tool(self, name: str) -> Tool:
        instance = self._instances.get(name)
        if instance is None:
            instance = self.toolset.get(name)(self)
            self._instances[name] = instance
        return instance

    # ------------------------------------------------------------------ calls
    def call(self, name: str, arguments: dict[str, Any], *, coercion: str = "paper") -> Record:
        """Coerce ``arguments`` (``paper``, ``typed`` or ``none``) and execute; may raise CallRejected."""
        cls = self.toolset.get(name)
        values = COERCERS[coercion](cls, arguments)
        with time_limit(self.timeout):
            return self.tool(name).execute(values)

    def replay(self, calls: Iterable[tuple[str, dict[str, Any], Record | None]], *, adopt: bool = True) -> list[Record]:
        """Execute earlier gold calls (name, structured input, recorded result) in order.

        With ``adopt``, tools whose results contain random values take the recorded ones, so that
        later calls can refer to them. Rejected calls are skipped: they changed nothing upstream either.
        """
        from .base import CallRejected

        results = []
        for name, arguments, recorded in calls:
            try:
                executed = self.call(name, arguments, coercion="none")
            except CallRejected:
                continue
            if adopt and recorded is not None:
                self.tool(name).adopt(executed, recorded)
            results.append(executed)
        return results


def new_session(tools: str, data: DataSource | str | os.PathLike[str] | None = None, **kwargs: Any) -> Session:
    return Session(tools, pristine_data(data), **kwargs)
