"""vLLM's Ray executor on vLLM's CPU build, through vLLM's platform plugins (entry-point group
``vllm.platform_plugins``, declared in setup.cfg, so installing this package into vLLM's environment
registers it).

vLLM's CPU platform names no Ray resource for its ranks, so both of vLLM's Ray executors refuse it
("current platform cpu does not support ray"). :func:`platform_plugin` gives vLLM
:class:`~apibank.vllm_cpu_ray.platform.CpuRayPlatform` instead, the CPU platform with one: only in a
process whose environment holds :data:`ACTIVATE` ``=1`` (the vllm backend sets it for an engine started
with ``distributed_executor_backend=ray`` on the CPU build; vLLM's Ray workers get it from the platform)
and only on vLLM's CPU build with its plain CPU platform. Anywhere else it returns None and vLLM chooses
its platform as it would without this package. This module imports nothing heavy (the package's facts alone): vLLM loads it in
every process where it resolves its platform."""

from __future__ import annotations

import os

from apibank.benchmark import VLLM_CPU_RAY_ENV as ACTIVATE

PLUGIN_NAME = "apibank_cpu_ray"  # the entry point's name in setup.cfg (what VLLM_PLUGINS would list)
PLATFORM = "apibank.vllm_cpu_ray.platform.CpuRayPlatform"
CPU_PLATFORM = "vllm.platforms.cpu.CpuPlatform"  # the one platform CpuRayPlatform extends


def platform_plugin() -> str | None:
    """The qualified name of :class:`~apibank.vllm_cpu_ray.platform.CpuRayPlatform` where this process
    asked for it and vLLM's own choice would be its CPU platform; otherwise None."""
    if os.environ.get(ACTIVATE) != "1":
        return None
    from vllm.platforms import cpu_platform_plugin

    return PLATFORM if cpu_platform_plugin() == CPU_PLATFORM else None
