"""torch's thread count on a CPU (``CpuThreads``): before each batch, one thread per core that the other
processes left free while the previous batch ran, not between batches (their CPU time on this process's
cores: the system's busy time less this process's own), at least one; fixed by ``threads`` or
``OMP_NUM_THREADS``; recorded."""

from __future__ import annotations

import pytest

from apibank.generate.backends import loading
from apibank.generate.backends.loading import CpuThreads


class Clock:
    """Stands in for ``CpuThreads._now``: (wall seconds, busy CPU seconds of all processes, own CPU seconds)."""

    def __init__(self) -> None:
        self.wall, self.busy, self.own = 100.0, 1000.0, 10.0

    def __call__(self):
        return self.wall, self.busy, self.own

    def run(self, seconds: float, own_cores: float, other_cores: float) -> None:
        self.wall += seconds
        self.own += seconds * own_cores
        self.busy += seconds * (own_cores + other_cores)


@pytest.fixture
def four_cores(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(loading.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    clock = Clock()
    monkeypatch.setattr(CpuThreads, "_now", lambda self: clock())
    return clock


def test_threads_follow_the_cores_other_processes_leave_free(four_cores):
    import torch

    before = torch.get_num_threads()
    threads = CpuThreads()

    def batch(seconds: float, own_cores: float, other_cores: float) -> None:
        four_cores.run(seconds, own_cores, other_cores)
        threads.batch_ended()

    try:
        assert threads.initial() == 4
        assert threads.adjust() == 4 and torch.get_num_threads() == 4  # nothing measured yet: every core
        batch(10, own_cores=4, other_cores=0)  # quiet
        assert threads.adjust() == 4
        batch(10, own_cores=2.4, other_cores=1.6)  # 2.4 cores left free
        assert threads.adjust() == 2
        batch(10, own_cores=0.5, other_cores=3.5)  # every core taken: still one
        four_cores.run(30, own_cores=0, other_cores=0)  # between batches (quiet): not counted
        assert threads.adjust() == 1 and torch.get_num_threads() == 1
        batch(10, own_cores=1, other_cores=0)
        four_cores.run(30, own_cores=0, other_cores=4)  # between batches (busy): not counted
        assert threads.adjust() == 4
        batch(0.01, own_cores=1, other_cores=0)  # too short to tell: every core
        assert threads.adjust() == 4
        assert threads.info() == {"torch_threads_from": "cores left free by other processes",
                                  "torch_threads_by_batch": {"1": 1, "2": 1, "4": 4}}
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("threads, env, expected", [(3, None, ("threads", 3)), (None, "2", ("OMP_NUM_THREADS", 2))])
def test_a_fixed_count_overrides(four_cores, monkeypatch, threads, env, expected):
    import torch

    before = torch.get_num_threads()
    if env is not None:
        monkeypatch.setenv("OMP_NUM_THREADS", env)
    fixed = CpuThreads(threads)
    try:
        assert fixed.initial() == expected[1] and fixed.adjust() == expected[1]
        four_cores.run(10, own_cores=1, other_cores=3)
        fixed.batch_ended()
        assert fixed.adjust() == expected[1]
        assert fixed.info()["torch_threads_from"] == expected[0]
    finally:
        torch.set_num_threads(before)


def test_busy_time_is_read_for_this_process_cores_only():
    """/proc/stat is read per core, for the cores this process may run on (a container sees the host's)."""
    cores = loading.os.sched_getaffinity(0) if hasattr(loading.os, "sched_getaffinity") else set()
    seconds = loading._busy_seconds(cores)
    if seconds is None:
        pytest.skip("this system has no /proc/stat")
    assert seconds > 0 and loading._busy_seconds(set()) == 0
