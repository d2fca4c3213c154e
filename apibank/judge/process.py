"""The judging worker's process: forking it, capping its memory, measuring it, ending it.

What :mod:`apibank.judge.worker` needs from the operating system, kept apart from its protocol: a
plain ``os.fork`` child, its address-space cap (``RLIMIT_AS``), its peak memory (``/proc``), a wide
pipe, killing and reaping, and new locks for what the child inherits mid-use from other threads.
Everything here degrades to a no-op where the system lacks it.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any


def fork_available() -> bool:
    return hasattr(os, "fork")


def own_clock() -> tuple[float, float]:
    """This process's CPU seconds (user + system, counted as ``/proc`` counts them) and the monotonic time.

    ``CLOCK_MONOTONIC`` is system-wide, so a parent may compare a child's reading with its own."""
    times = os.times()
    return times.user + times.system, time.monotonic()


def cpu_seconds(pid: int) -> float | None:
    """The CPU seconds (user + system) process ``pid`` has used so far; None where ``/proc`` is missing."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def limit_memory(memory_mb: float | None) -> None:
    if memory_mb is None:
        return
    try:
        import resource
    except ImportError:  # not POSIX
        return
    current = status_kb("VmSize")
    if current is None:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = current * 1024 + int(memory_mb * 1024 * 1024)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def reset_peak() -> int | None:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
    except OSError:
        return None
    return status_kb("VmRSS")


PIPE_BYTES = 1 << 20


def widen(connection: Any) -> None:
    """A 1 MiB pipe: the worker then rarely waits for the parent to read (Linux; elsewhere a no-op).

    Reports queue up instead of each waking the parent; a report read late changes no verdict (each
    step's clock is the child's own, carried in its reports)."""
    try:
        import fcntl

        fcntl.fcntl(connection.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (ImportError, OSError):
        pass


class Child:
    """The parent's handle on a forked child: its exit code, and killing and reaping it."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.exitcode: int | None = None

    def join(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while self.exitcode is None:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.exitcode = os.waitstatus_to_exitcode(status)
                return
            if time.monotonic() >= deadline:
                return
            time.sleep(0.001)

    def end(self) -> None:
        if self.exitcode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _, status = os.waitpid(self.pid, 0)
            self.exitcode = os.waitstatus_to_exitcode(status)


def fresh_module_locks(*modules: Any) -> None:
    """Replace the module-level locks of ``modules`` in a forked child (see :func:`fresh_locks`)."""
    makers = {type(threading.Lock()): threading.Lock, type(threading.RLock()): threading.RLock}
    for module in modules:
        for name, value in list(vars(module).items()):
            make = makers.get(type(value))
            if make is not None:
                setattr(module, name, make())


def fresh_locks(*objects: Any) -> None:
    """Give objects inherited across a fork new locks (another thread may have held the old ones)."""
    seen: set[int] = set()
    pending = list(objects)
    while pending:
        item = pending.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        if hasattr(item, "_lock"):
            try:
                item._lock = threading.Lock()
            except AttributeError:
                pass
        for name in ("_retriever", "backend", "inner_retriever"):
            pending.append(getattr(item, name, None))
