"""Judging in a worker process whose deadline and memory really bind.

A signal timer cannot stop work done in C (tokenisers, the regex engine), is unavailable outside the
main thread and would replace the caller's own timer. So the API rows of one ``score()`` call are
judged in a child process forked from the caller once everything shared (parsed databases, the
ToolSearcher model and its catalogue embeddings) is loaded; the child inherits the work list and
sends back one result per finished step. The parent waits on the pipe with a per-step deadline:

* a step that uses more than ``timeout`` seconds of CPU time gets an :class:`Overrun` (``TIMEOUT``),
  the child is killed and a new one is forked at the next step. CPU time, not wall time, so that a
  verdict does not depend on the machine's load or on how late the parent reads a report: each report
  carries the child's CPU clock; the parent stops a running step once the child's clock (``/proc``)
  is ``timeout`` past the last report's, and judges a step that reported over its limit (the parent
  read too late to stop it) as if it had been stopped. A step that uses no CPU (blocked) is stopped
  after ``WALL_FACTOR`` times ``timeout`` of wall time since the child's last report, as is any
  step where ``/proc`` is missing;
* the child's address space is capped (``RLIMIT_AS``) at what it inherited plus ``memory_mb``: a step
  that allocates more gets ``MemoryError`` in Python or dies in C, and is an :class:`Overrun`
  (``MEMORY_LIMIT``) either way.

The worst case per step is therefore ``timeout`` of CPU time plus one kill and fork (milliseconds)
and ``memory_mb`` of memory above the caller's, from any thread of the caller. One child serves a whole
``score()`` call, so the overhead is one fork plus one pickled message per step.

Steps are grouped: a handler gets the state its group carried from the previous step (the paper
protocol's shared gold record, edited in place by some checks) and returns the state for the next.
The state after each step travels with its result, so a restarted child resumes a group where the
killed one left it (the overrun step's own edits are lost: it has no verdict to keep them for).

The child is a plain ``os.fork`` (so a daemonic pool worker may score too). In it, inherited objects
are frozen out of the cyclic collector, locks other threads may have held at the fork are renewed,
and SIGINT is ignored (the parent handles it). The caller's signal handlers and timers are never
touched: the parent only waits on a pipe. The system calls behind all this live in
:mod:`apibank.judge.process`; this module is the protocol between parent and child.

Where ``fork`` does not exist (Windows), steps run in the calling process, bounded only by the
input caps (``MAX_PREDICTION_CHARS`` in :mod:`apibank.judge.categories`, reference validation).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Sequence

from apibank.benchmark import JUDGE_MEMORY_MB
from apibank.judge.categories import MEMORY_LIMIT, TIMEOUT
from apibank.judge.process import (
    Child, cpu_seconds, fork_available, limit_memory, own_clock, reset_peak, status_kb, widen,
)

DEFAULT_MEMORY_MB = JUDGE_MEMORY_MB
# A fork is ready in milliseconds; this only guards against a child that never starts.
READY_WAIT_S = 120.0
# The longest single wait asked of the system; longer deadlines are waited for in parts.
LONGEST_WAIT_S = 86_400.0
# A step that uses no CPU (blocked) is stopped after this many times its CPU limit of wall time.
WALL_FACTOR = 30.0


@dataclass(frozen=True)
class Overrun:
    """A step stopped by its deadline or its memory limit (``kind`` is TIMEOUT or MEMORY_LIMIT)."""

    kind: str
    message: str


@dataclass(frozen=True)
class Step:
    group: Hashable  # steps of one group are consecutive and share the carried state
    payload: Any


Handler = Callable[[Any, Any], "tuple[Any, Any]"]  # (payload, carried state) -> (result, state)


@dataclass
class RunStats:
    """What a run cost: restarts of the child and, when measured, each step's peak memory."""

    forks: int = 0
    peak_mb: dict[int, float] | None = None


def _child(
    connection: Any,
    steps: Sequence[Step],
    start: int,
    state: Any,
    handler: Handler,
    memory_mb: float | None,
    measure: bool,
    after_fork: Callable[[], Any] | None,
) -> bool:
    # Everything inherited stays out of the cyclic collector: a collection would walk (and so copy,
    # page by page) the whole inherited heap, which costs more than the judging itself.
    gc.freeze()
    # Ctrl-C reaches the whole process group: the parent handles it (and kills this child).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    limit_memory(memory_mb)
    if after_fork is not None:
        after_fork()
    connection.send(("ready", None, own_clock()))
    for index in range(start, len(steps)):
        step = steps[index]
        if index > start and steps[index - 1].group != step.group:
            state = None
        baseline = reset_peak() if measure else None
        try:
            result, state = handler(step.payload, state)
        except MemoryError:
            result, state = Overrun(MEMORY_LIMIT, f"the step exceeded its memory limit of {memory_mb} MB"), state
        except Exception as error:  # an environment failure (or a bug): the parent raises it
            connection.send(("error", _portable(error), None))
            return False
        peak = None
        if baseline is not None:
            high = status_kb("VmHWM")
            peak = max(0, (high or baseline) - baseline) / 1024
        following = index + 1 < len(steps) and steps[index + 1].group == step.group
        try:
            connection.send((index, result, (state if following else None, peak, own_clock())))
        except MemoryError:
            connection.send((index, Overrun(MEMORY_LIMIT, "the step's result exceeded the memory limit"),
                             (state, peak, own_clock())))
        except (BrokenPipeError, EOFError):
            raise
        except Exception as error:  # a result that cannot be pickled is a judge bug: say so in the parent
            connection.send(("error", WorkerError(f"step {index}: result not transferable: {error!r}"), None))
            return False
    return True


def run_steps(
    steps: Sequence[Step],
    handler: Handler,
    *,
    timeout: float | None,
    memory_mb: float | None = JUDGE_MEMORY_MB,
    after_fork: Callable[[], Any] | None = None,
    finish: Callable[[], Any] | None = None,
    merge: Callable[[Any], None] | None = None,
    measure: bool = False,
    stats: RunStats | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Any]:
    """Run ``handler`` over ``steps`` in a bounded child; one result (or :class:`Overrun`) per step.

    ``progress`` is called with (steps done, steps in all) as results come in.

    ``after_fork`` runs in each child before its first step; ``finish`` runs in a child that completes
    its steps and its return value is handed to ``merge`` in the parent (caches worth keeping).
    """
    if not steps:
        return []
    if not fork_available():
        return _run_here(steps, handler, progress)
    results: list[Any] = [None] * len(steps)
    peaks: dict[int, float] = {}
    position = 0
    state: Any = None
    while position < len(steps):
        # A plain fork, not multiprocessing.Process: that refuses to start from a daemonic process
        # (a multiprocessing pool worker, a data-loader worker), and this child needs none of its setup.
        receiver, sender = multiprocessing.Pipe(duplex=False)
        widen(sender)
        pid = os.fork()
        if pid == 0:  # the child: never returns into the caller's code
            code = 1
            try:
                receiver.close()
                _child_main(sender, steps, position, state, handler, memory_mb, measure, after_fork, finish)
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
        sender.close()
        child = Child(pid)
        if stats is not None:
            stats.forks += 1
        try:
            position, state = _collect(receiver, child, steps, position, state, results, peaks, timeout, memory_mb, merge,
                                       progress)
        finally:
            receiver.close()
            child.end()
    if stats is not None and measure:
        stats.peak_mb = peaks
    return results


class WorkerError(RuntimeError):
    """An exception raised while judging in the worker that could not be carried back as itself."""


def _portable(error: Exception) -> Exception:
    import pickle

    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:
        return WorkerError(f"{type(error).__name__}: {error}")


def _child_main(sender: Any, steps: Sequence[Step], start: int, state: Any, handler: Handler,
                memory_mb: float | None, measure: bool, after_fork: Callable[[], Any] | None,
                finish: Callable[[], Any] | None) -> None:
    try:
        if not _child(sender, steps, start, state, handler, memory_mb, measure, after_fork):
            return
    except (BrokenPipeError, EOFError):  # the parent gave up on this child
        return
    value = None
    if finish is not None:
        try:
            value = finish()
        except Exception:  # a cache that cannot be sent back only costs time
            value = None
    try:
        sender.send(("finish", value, None))
    except Exception:
        sender.send(("finish", None, None))
    sender.close()


def _collect(receiver: Any, process: Any, steps: Sequence[Step], position: int, state: Any, results: list[Any],
             peaks: dict[int, float], timeout: float | None, memory_mb: float | None,
             merge: Callable[[Any], None] | None,
             progress: Callable[[int, int], None] | None = None) -> tuple[int, Any]:
    """Read the child's reports until it finishes or overruns; returns where the next child starts."""
    if not receiver.poll(READY_WAIT_S):
        raise RuntimeError("the judging worker process did not start")
    try:
        _, _, clock = receiver.recv()  # "ready": the first step's clock starts at the child's reading
    except EOFError:
        process.join(5)
        raise RuntimeError(f"the judging worker process failed to start (exit code {process.exitcode})") from None
    group_state = state

    def overrun(kind: str, message: str) -> tuple[int, Any]:
        # The child is killed and a new one resumes after this step with the state from before it.
        results[position] = Overrun(kind, message)
        if progress is not None:
            progress(position + 1, len(steps))
        return position + 1, _state_after(steps, position, group_state)

    while True:
        if position < len(steps):
            late = _await_step(receiver, process.pid, clock, timeout)
            if late is not None:
                return overrun(TIMEOUT, late)
        elif not receiver.poll(READY_WAIT_S):  # every step reported; only the cache is missing
            return position, None
        try:
            message = receiver.recv()
        except (EOFError, OSError):
            if position >= len(steps):
                return position, None
            process.join(5)
            return overrun(MEMORY_LIMIT, f"the judging process died (exit code {process.exitcode}), presumably at "
                                         f"its memory limit of {memory_mb} MB")
        index, result, extra = message
        if index == "error":
            raise result
        if index == "finish":
            if merge is not None:
                merge(result)
            return len(steps), None
        next_state, peak, next_clock = extra
        if timeout is not None and next_clock[0] - clock[0] > timeout:
            # Finished, but over its CPU time: the same verdict as if it had been stopped in time (the
            # parent read the reports too late to stop it).
            return overrun(TIMEOUT, _cpu_overrun(timeout))
        results[index] = result
        group_state, clock = next_state, next_clock
        if peak is not None:
            peaks[index] = peak
        position = index + 1
        if progress is not None:
            progress(position, len(steps))


def _cpu_overrun(timeout: float) -> str:
    return f"the sample exceeded its time limit of {timeout} s of CPU time"


def _await_step(receiver: Any, pid: int, clock: tuple[float, float], timeout: float | None) -> str | None:
    """Wait for the child's next report; the reason it overran instead, or None once a report is there.

    ``clock`` is the child's (CPU, monotonic) reading at its last report: the step began then, however
    late the parent reads it, and only CPU time the child itself uses counts against ``timeout``."""
    if timeout is None:
        receiver.poll(None)
        return None
    started_cpu, started = clock
    wall_limit = timeout * WALL_FACTOR
    while True:
        waited = time.monotonic() - started
        if waited < timeout:  # one thread cannot have used more CPU than the wall time since its report
            if _wait(receiver, timeout - waited):
                return None
            continue
        cpu = cpu_seconds(pid)  # None without /proc: then only the wall limit stops a step early
        used = 0.0 if cpu is None else cpu - started_cpu
        if used > timeout or waited >= wall_limit:
            if receiver.poll(0):  # it reported meanwhile
                return None
            if used > timeout:
                return _cpu_overrun(timeout)
            return f"the sample did not finish within {wall_limit:g} s of wall time (its limit is {timeout} s of CPU time)"
        # The child cannot use more CPU than the wall time that passes (one thread), so this never
        # waits past the limit by more than the clock's resolution.
        if _wait(receiver, max(0.005, min(timeout - used, wall_limit - waited))):
            return None


def _wait(receiver: Any, seconds: float | None) -> bool:
    """``receiver.poll(seconds)`` for any deadline: the system refuses single waits of centuries."""
    if seconds is None or seconds <= LONGEST_WAIT_S:
        return receiver.poll(seconds)
    deadline = time.monotonic() + seconds
    while not receiver.poll(min(LONGEST_WAIT_S, max(0.0, deadline - time.monotonic()))):
        if time.monotonic() >= deadline:
            return False
    return True


def _state_after(steps: Sequence[Step], position: int, state: Any) -> Any:
    """The carried state for the step after an overrun one: kept within its group, else reset."""
    following = position + 1
    if following < len(steps) and steps[following].group == steps[position].group:
        return state
    return None


def _run_here(steps: Sequence[Step], handler: Handler, progress: Callable[[int, int], None] | None = None) -> list[Any]:
    results = []
    state = None
    for index, step in enumerate(steps):
        if index and steps[index - 1].group != step.group:
            state = None
        result, state = handler(step.payload, state)
        results.append(result)
        if progress is not None:
            progress(index + 1, len(steps))
    return results


