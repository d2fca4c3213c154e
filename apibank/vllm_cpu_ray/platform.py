"""The platform :func:`apibank.vllm_cpu_ray.platform_plugin` names (imported by vLLM only then)."""

from __future__ import annotations

from vllm.platforms.cpu import CpuPlatform

from apibank.vllm_cpu_ray import ACTIVATE


class CpuRayPlatform(CpuPlatform):
    """vLLM's CPU platform with a Ray resource for its ranks.

    Each rank takes one unit of Ray's ``GPU`` resource, a logical slot (Ray's resources are logical; the
    backend starts a local cluster with as many as there are ranks, ``ray start --num-gpus N`` declares
    them on a cluster of your own). No other resource works in vLLM 0.32: Ray refuses ``CPU`` in an actor's
    ``resources`` ("Use the 'num_cpus' and 'num_gpus' keyword instead"), and both Ray executors read each
    rank's ids from ``ray.get_runtime_context().get_accelerator_ids()[ray_device_key]``, which holds Ray's
    accelerator resources only."""

    ray_device_key = "GPU"
    # vLLM sets each of these to "1" in the environment of every Ray worker it starts, before the worker
    # imports vLLM: Ray leaves CUDA_VISIBLE_DEVICES alone for the logical slots, and the workers resolve
    # this platform too (they read their rank's slot from it).
    ray_noset_device_env_vars = ["RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES", ACTIVATE]  # noqa: RUF012 (a list in vLLM)
