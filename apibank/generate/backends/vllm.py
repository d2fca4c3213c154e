"""vLLM's offline engine (extra ``vllm``, imported lazily): vLLM's GPU build, or its CPU build
(``vllm-cpu``), the same engine code.

Every engine setting vLLM has (memory fraction, KV cache space, maximum model length, tensor and
pipeline parallel sizes, eager mode, ...) passes through one option, ``engine_args``
(``--engine-arg KEY=VALUE``, repeated), checked against vLLM's own engine arguments before any work.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any, Iterator, Sequence

from apibank.errors import BrokenExtra, UsageError, require_extra
from apibank.generate.backends.base import Backend, Completion, DecodingSettings
from apibank.generate.backends.choice import import_problem, vllm_import_error
from apibank.generate.backends.hf import _HFRendering, template_sha256
from apibank.generate.backends.loading import available_memory, source_info
from apibank.generate.backends.options import (CHAT_TEMPLATE, CHAT_TEMPLATE_KWARGS, DTYPE, RESPONSE_TEMPLATE, REVISION,
                                                TOOL_PARSER, TRUST_REMOTE_CODE, Option, parse_pair)
from apibank.generate.stops import StopWatch

# Engine arguments that the backend sets from its own options: given as --engine-arg they would
# contradict what results.json records.
OWN_ARGUMENTS = {"model": "--model", "tokenizer": "--model", "revision": "--revision",
                 "tokenizer_revision": "--revision", "dtype": "--dtype", "trust_remote_code": "--trust-remote-code"}


def engine_argument_names() -> frozenset[str]:
    """The names of vLLM's engine arguments (the fields of ``EngineArgs``) in the installed vLLM."""
    from vllm.engine.arg_utils import EngineArgs

    return frozenset(field.name for field in dataclasses.fields(EngineArgs))


def check_engine_args(engine_args: dict[str, Any], known: frozenset[str]) -> None:
    """Each ``--engine-arg`` names an engine argument of the installed vLLM that the backend does not set
    from an option of its own; raises :class:`UsageError` for the first that does not."""
    for key in engine_args:
        if key in OWN_ARGUMENTS:
            raise UsageError(f"--engine-arg {key}: set by {OWN_ARGUMENTS[key]}; give {OWN_ARGUMENTS[key]} instead")
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=2, cutoff=0.6)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise UsageError(f"--engine-arg {key}: not an engine argument of the installed vLLM{hint} "
                             "(they are the fields of vllm.engine.arg_utils.EngineArgs)")


_BATCHES = itertools.count()  # request ids unique within the process: apibank-<batch>-<row>

GIB = 1 << 30
# vLLM's CPU build takes its KV cache from ordinary memory: its default (92% of all memory, which must be
# free at start) refuses to start on any machine that runs anything else.
CPU_KV_CACHE_BOUNDS = (1 * GIB, 4 * GIB)
# API-Bank's longest paper prompt is 1,349 tokens and its largest answer budget 345: 4,096 holds any row,
# and a model's full context (32,768 for Gemma 3) would not fit such a cache at all.
CPU_MAX_MODEL_LEN = 4096
CPU_ENV = {"VLLM_CPU_NUM_OF_RESERVED_CPU": "0"}  # every core computes (by default vLLM keeps one back)
CPU_BINDING = "VLLM_CPU_OMP_THREADS_BIND"  # the cores of each rank, ranks separated by "|" (vLLM's envs.py)
# Where `--backend vllm` finds no vLLM: the GPU build is the extra, the CPU build an environment of its own.
CPU_BUILD_HINT = ("on a CPU, vLLM's CPU build in an environment of its own: bash scripts/vllm-cpu-env "
                  "(docs/backends.md, \"vLLM on a CPU\")")


def require_vllm(what: str) -> None:
    """vLLM is installed and imports; else :class:`~apibank.errors.MissingExtra` (with the GPU extra and the
    CPU build's command) or :class:`~apibank.errors.BrokenExtra` (with the fix), both one line."""
    require_extra("vllm", ("vllm",), what, otherwise=CPU_BUILD_HINT)
    error = vllm_import_error()
    if error is not None:
        raise BrokenExtra(f"{what}: {import_problem('vLLM', error)}")


def world_size(engine_args: dict[str, Any]) -> int:
    """The engine's ranks on this machine: tensor times pipeline parallel size."""
    sizes = [engine_args.get(key, 1) for key in ("tensor_parallel_size", "pipeline_parallel_size")]
    return sizes[0] * sizes[1] if all(isinstance(size, int) and size > 0 for size in sizes) else 1


def rank_core_binding(ranks: int, cores: Sequence[int], numa_nodes: int) -> str | None:
    """The value of :data:`CPU_BINDING` for ``ranks`` ranks on the ``cores`` this process may use: equal
    contiguous shares, one core per rank on 2 cores (``"0|1"``). None where vLLM's own binding serves: one
    rank, or no more ranks than NUMA nodes (vLLM binds one rank per node, and refuses more ranks than nodes
    unless told the cores). Raises :class:`UsageError` where the cores are fewer than the ranks."""
    if ranks <= 1 or ranks <= numa_nodes:
        return None
    cores = sorted(cores)
    if len(cores) < ranks:
        raise UsageError(f"--engine-arg tensor_parallel_size/pipeline_parallel_size: {ranks} ranks, and this "
                         f"process may use {len(cores)} cores; vLLM's CPU build binds each rank to cores of its own: "
                         f"give at most {len(cores)} ranks")
    share = len(cores) // ranks
    return "|".join(",".join(str(core) for core in cores[rank * share:(rank + 1) * share]) for rank in range(ranks))


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` in ``os.environ`` for the block (the processes it starts inherit them), then as before."""
    before = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def uses_ray(engine_args: dict[str, Any]) -> bool:
    """Whether the engine runs its ranks on vLLM's Ray executor."""
    return engine_args.get("distributed_executor_backend") == "ray"


def check_cpu_ray() -> None:
    """vLLM's Ray executor can run on this CPU build through :mod:`apibank.vllm_cpu_ray`; raises
    :class:`UsageError` (one line, with the fix) where it cannot."""
    from importlib.metadata import entry_points
    from importlib.util import find_spec

    from vllm import envs
    from vllm.platforms import current_platform
    from vllm.plugins import PLATFORM_PLUGINS_GROUP

    from apibank.vllm_cpu_ray import CPU_PLATFORM, PLATFORM, PLUGIN_NAME

    flag = "--engine-arg distributed_executor_backend=ray"
    platform = f"{type(current_platform).__module__}.{type(current_platform).__qualname__}"
    if platform not in (CPU_PLATFORM, PLATFORM):  # another plugin's: vLLM would refuse a second one
        raise UsageError(f"{flag}: vLLM runs on {platform} here; the Ray executor runs on vLLM's CPU build with "
                         f"its plain CPU platform ({CPU_PLATFORM}) only: drop it (ranks then run on vLLM's own "
                         "processes)")
    if envs.VLLM_TARGET_DEVICE == "cpu":  # vLLM then takes its CPU platform without asking any plugin
        raise UsageError(f"{flag}: VLLM_TARGET_DEVICE=cpu keeps vLLM from loading platform plugins, which its Ray "
                         "executor needs on the CPU build: unset VLLM_TARGET_DEVICE")
    if envs.VLLM_PLUGINS is not None and PLUGIN_NAME not in envs.VLLM_PLUGINS:
        raise UsageError(f"{flag}: VLLM_PLUGINS leaves out this package's platform plugin, which vLLM's Ray "
                         f"executor needs on the CPU build: add {PLUGIN_NAME} to VLLM_PLUGINS")
    if PLUGIN_NAME not in {entry.name for entry in entry_points(group=PLATFORM_PLUGINS_GROUP)}:
        raise UsageError(f"{flag}: this package's vLLM platform plugin is not registered in this environment "
                         f"(installed without its entry points): {sys.executable} -m pip install -e PATH_TO_APIBANK")
    if find_spec("ray") is None:
        raise UsageError(f"{flag}: Ray is not installed in vLLM's environment: {sys.executable} -m pip install ray")


def check_cpu_engine_args(engine_args: dict[str, Any]) -> str | None:
    """On vLLM's CPU build: refuses what it cannot run, before any work, and returns the per-rank core
    binding the backend sets (see :func:`rank_core_binding`; None where vLLM's own serves, the user set
    :data:`CPU_BINDING`, or the ranks run on Ray, whose workers vLLM does not bind)."""
    if uses_ray(engine_args):
        check_cpu_ray()
        return None
    if CPU_BINDING in os.environ or world_size(engine_args) == 1:
        return None
    try:  # the NUMA nodes vLLM's own binding would use (vLLM 0.32's helper)
        from vllm.utils.cpu_resource_utils import get_visible_memory_node

        numa_nodes = len(get_visible_memory_node())
    except (ImportError, OSError):
        numa_nodes = 1
    return rank_core_binding(world_size(engine_args), usable_cores(), numa_nodes)


def usable_cores() -> list[int]:
    """The cores this process may run on."""
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))


def join_ray_cluster() -> bool:
    """Connects this process to the Ray cluster that ``ray start`` made (or ``RAY_ADDRESS`` names); False
    where there is none."""
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # Ray sends usage statistics unless told not to
    try:
        ray.init(address="auto")
    except ConnectionError:
        return False
    return True


def check_ray_slots(ranks: int) -> None:
    """The connected Ray cluster has a slot of Ray's ``GPU`` resource for each of ``ranks`` ranks (see
    :class:`~apibank.vllm_cpu_ray.platform.CpuRayPlatform`); else :class:`UsageError`."""
    import ray

    slots = int(ray.cluster_resources().get("GPU", 0))
    if slots < ranks:
        address = ray.get_runtime_context().gcs_address
        raise UsageError(f"--engine-arg distributed_executor_backend=ray: the Ray cluster at {address} has {slots} "
                         f"slots of Ray's GPU resource and the engine has {ranks} ranks; on vLLM's CPU build each "
                         f"rank takes one: start the cluster with ray start --head --num-gpus {ranks} (logical "
                         "slots; no GPU is needed)")


def check_cpu_ray_cluster(ranks: int) -> None:
    """Before any work: a Ray cluster this process would join holds the ranks (see :func:`check_ray_slots`);
    nothing to check where there is none (:func:`start_cpu_ray` starts one) or this process is connected."""
    import ray

    if not ray.is_initialized() and join_ray_cluster():
        try:
            check_ray_slots(ranks)
        finally:
            ray.shutdown()


def start_cpu_ray(ranks: int) -> tuple[dict[str, str], dict[str, str], bool]:
    """Connects this process to Ray for an engine on vLLM's CPU build: to the cluster that ``ray start`` made
    (or ``RAY_ADDRESS`` names), else to a local cluster started here, with a slot of Ray's ``GPU``
    resource per rank and each rank's OpenMP threads an equal share of this process's cores. Returns the
    environment the engine starts with (the cluster's address for vLLM's engine process, and the platform's
    switch), the environment vLLM gives its Ray workers from this process's Ray job, and whether this call
    connected (then :meth:`VLLMBackend.close` disconnects, which stops a local cluster)."""
    import ray

    from apibank.vllm_cpu_ray import ACTIVATE

    connected = not ray.is_initialized()
    if connected and not join_ray_cluster():  # a local cluster, gone when this process disconnects
        threads = max(1, len(usable_cores()) // ranks)
        # vLLM reads this process's runtime_env and gives it to its Ray workers (their OpenMP threads)
        ray.init(num_cpus=len(usable_cores()), num_gpus=ranks, include_dashboard=False,
                 runtime_env={"env_vars": {"OMP_NUM_THREADS": str(threads)}})
    try:
        check_ray_slots(ranks)
    except UsageError:
        if connected:
            ray.shutdown()
        raise
    workers = dict((ray.get_runtime_context().runtime_env or {}).get("env_vars") or {})
    return {ACTIVATE: "1", "RAY_ADDRESS": ray.get_runtime_context().gcs_address}, workers, connected


def model_context_length(folder: str) -> int | None:
    """The longest context a local model folder's config declares (None when it says none or is not local)."""
    try:
        config = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for section in (config, config.get("text_config") or {}):
        value = section.get("max_position_embeddings") if isinstance(section, dict) else None
        if isinstance(value, int) and value > 0:
            return value
    return None


def cpu_engine_defaults(given: dict[str, Any], folder: str) -> dict[str, Any]:
    """The engine arguments vLLM's CPU build needs to start on a machine that runs other things too, for
    those the user did not set: a KV cache of a quarter of the available memory within
    :data:`CPU_KV_CACHE_BOUNDS`, a context of at most :data:`CPU_MAX_MODEL_LEN`, and eager mode (compiling
    the model took 4 times as long to start for the same generation speed)."""
    defaults: dict[str, Any] = {}
    if not {"kv_cache_memory_bytes", "gpu_memory_utilization"} & given.keys() and \
            "VLLM_CPU_KVCACHE_SPACE" not in os.environ:
        low, high = CPU_KV_CACHE_BOUNDS
        defaults["kv_cache_memory_bytes"] = min(high, max(low, available_memory() // 4))
    if "max_model_len" not in given:
        context = model_context_length(folder)
        defaults["max_model_len"] = min(context, CPU_MAX_MODEL_LEN) if context else CPU_MAX_MODEL_LEN
    if "enforce_eager" not in given:
        defaults["enforce_eager"] = True
    return defaults


def on_cpu() -> bool:
    """Whether the installed vLLM runs on the CPU (its CPU build)."""
    from vllm.platforms import current_platform

    return bool(current_platform.is_cpu())

# ----------------------------------------------------------------------------------------- vLLM
class VLLMBackend(_HFRendering, Backend):
    """vLLM's offline engine: ``pip install 'apibank[vllm]'`` on a GPU machine; on a CPU, vLLM's CPU build
    (``vllm-cpu``, see the README), started with :func:`cpu_engine_defaults` where not told otherwise.

    Prompts are rendered with the model's HF tokenizer exactly as for the transformers backend and
    sent as token ids, so both backends see identical inputs. Prefix caching is on (rows of one
    dialogue share their history), each row gets its own token budget and is reported as soon as it
    finishes, and stop strings follow the shared rule of :func:`~apibank.generate.stops.first_stop`
    (see ``generate``).
    """

    name = "vllm"
    options = (
        REVISION, DTYPE, TRUST_REMOTE_CODE, CHAT_TEMPLATE, CHAT_TEMPLATE_KWARGS, TOOL_PARSER, RESPONSE_TEMPLATE,
        Option("engine_args", "any engine argument of vLLM, e.g. --engine-arg tensor_parallel_size=2 "
               "--engine-arg max_model_len=4096 (repeat the flag; values read as JSON where they parse)",
               type=parse_pair, kind="pairs", flag="--engine-arg", metavar="KEY=VALUE"),
    )

    @classmethod
    def check_options(cls, model: str, options: dict[str, Any], *, fmt: str | None = None) -> None:
        from apibank.generate.backends.model_checks import check_hf_model

        require_vllm(f"--backend {cls.name}")
        engine_args = dict(options.get("engine_args") or {})
        check_engine_args(engine_args, engine_argument_names())
        if on_cpu():
            check_cpu_engine_args(engine_args)
            if uses_ray(engine_args):
                check_cpu_ray_cluster(world_size(engine_args))
        check_hf_model(model, options, fmt)

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        dtype: str = "auto",
        trust_remote_code: bool = False,
        chat_template: str = "auto",
        tool_parser: str | None = None,
        response_template: str | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        engine_args: dict[str, Any] | None = None,
    ) -> None:
        require_vllm("the vllm backend")
        from vllm import LLM

        from apibank.generate.backends.loading import converted_model_folder, resolve_model

        self.source = resolve_model(model)
        # vLLM reads no GGUF file on a CPU: it gets the package's converted folder (the same tokenizer
        # and de-quantised weights as the transformers backend).
        location = str(converted_model_folder(self.source)) if self.source.kind == "gguf" else self.source.location
        self.model_id = model
        self.revision = revision
        self.dtype = dtype
        self.chat_template = chat_template
        self.tool_parser = tool_parser
        self.response_template = response_template
        # Prompts are rendered here (vLLM gets token ids): its chat_template_kwargs are ours.
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        engine_args = dict(engine_args or {})
        check_engine_args(engine_args, engine_argument_names())
        self.engine_env: dict[str, str] = {}
        self.ray_workers_env: dict[str, str] = {}  # what vLLM's Ray workers get from this process's Ray job
        self._ray_connected = False
        # The environment the engine starts with (the per-rank binding, or Ray's address and the platform's
        # switch): this engine's alone (another engine of the process may differ), set while it starts.
        starting: dict[str, str] = {}
        if on_cpu():
            ranks = check_cpu_engine_args(engine_args)
            engine_args = {**cpu_engine_defaults(engine_args, location), **engine_args}
            for key, value in CPU_ENV.items():  # read by vLLM's workers when the engine starts
                self.engine_env[key] = os.environ.setdefault(key, value)
            if uses_ray(engine_args):
                starting, self.ray_workers_env, self._ray_connected = start_cpu_ray(world_size(engine_args))
            elif ranks:
                starting = {CPU_BINDING: ranks}
            self.engine_env.update(starting or {k: v for k, v in os.environ.items() if k == CPU_BINDING})
        # Rows of one dialogue share their history: prefix caching reuses it unless told otherwise.
        self.engine_args = {"enable_prefix_caching": True, "seed": 0, **engine_args}
        try:
            with _environment(starting):
                self.llm = LLM(model=location, revision=revision, tokenizer_revision=revision, dtype=dtype,
                               trust_remote_code=trust_remote_code, **self.engine_args)
        except BaseException:
            self._disconnect_ray()
            raise
        self.tokenizer = self.llm.get_tokenizer()

    @classmethod
    def prompt_renderer(cls, model: str, **options: Any):
        from apibank.generate.backends.hf import TokenizerRendering

        return TokenizerRendering(model, **options)  # the tokenizer vLLM renders with, no engine

    def info(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "model_id": self.model_id,
            "model_revision": f"sha256:{self.source.sha256}" if self.source.kind == "gguf" else self.revision,
            "model_source": self.source.kind,
            **source_info(self.source),
            "dtype": self.dtype,
            "engine_args": self.engine_args,
            **({"engine_env": self.engine_env} if self.engine_env else {}),
            **({"ray_workers_env": self.ray_workers_env} if self.ray_workers_env else {}),
            "chat_template": self.chat_template,
            "chat_template_sha256": template_sha256(self.tokenizer),
            **({"chat_template_kwargs": self.chat_template_kwargs} if self.chat_template_kwargs else {}),
        }

    def close(self) -> None:
        """Stops the engine's process now. Left to the garbage collector, vLLM's shutdown runs at whatever point
        a collection happens, even inside the compiler (CPython 3.11 then raises "AST constructor recursion
        depth mismatch"), and keeps the engine's memory until then."""
        llm, self.llm = getattr(self, "llm", None), None
        if llm is not None:
            llm.llm_engine.engine_core.shutdown()
        self._disconnect_ray()

    def _disconnect_ray(self) -> None:
        """Disconnects from Ray where :func:`start_cpu_ray` connected (a local cluster stops with it)."""
        if getattr(self, "_ray_connected", False):
            import ray

            self._ray_connected = False
            ray.shutdown()

    def _params(self, budget: int, settings: DecodingSettings):
        from vllm import SamplingParams

        sampling = {"temperature": 0.0}
        if settings.sampling:
            sampling = {"temperature": settings.temperature, "seed": settings.seed}
        return SamplingParams(**sampling, max_tokens=budget, skip_special_tokens=False)

    def generate(self, conversations, prompts, settings, on_completion=None):
        """The rows go to vLLM's engine together and are stepped as its own ``LLM.generate`` steps them
        (``add_request``, then ``step`` until done). vLLM is given no stop strings: the package's stop
        rule (:class:`~apibank.generate.stops.StopWatch`, the one every backend uses) reads each row's
        streamed tokens and aborts the row's request when it fires, so each row is reported as soon as it
        finishes and is cut exactly as the other backends cut it."""
        if not conversations:
            return []
        add_special = self._add_special_tokens(conversations[0])
        inputs = [
            {"prompt_token_ids": self.tokenizer(prompt, add_special_tokens=add_special)["input_ids"]}
            for prompt in prompts
        ]
        budgets = [settings.max_tokens_for(c.level, c.kind) for c in conversations]
        engine = self.llm.llm_engine
        batch = next(_BATCHES)
        running: dict[str, int] = {}  # request id -> row

        def decode(ids) -> str:
            return self.tokenizer.decode(ids, skip_special_tokens=True)

        watches = [StopWatch(settings.stop, decode) for _ in inputs]
        completions: dict[int, Completion] = {}
        try:
            for index, given in enumerate(inputs):
                request_id = f"apibank-{batch}-{index}"
                engine.add_request(request_id, given, self._params(budgets[index], settings))
                running[request_id] = index
            while running:
                if not engine.has_unfinished_requests():
                    raise RuntimeError(f"vLLM's engine dropped the requests {sorted(running)}")
                for output in engine.step():
                    index = running.get(output.request_id)
                    if index is None:
                        continue
                    generated = output.outputs[0]
                    stopped = not output.finished and watches[index](list(generated.token_ids))
                    if not (output.finished or stopped):
                        continue
                    if stopped:
                        engine.abort_request([output.request_id])
                    del running[output.request_id]
                    completions[index] = self._completion(conversations[index], prompts[index], inputs[index],
                                                          generated, "stop" if stopped else generated.finish_reason)
                    if on_completion is not None:
                        on_completion(index, completions[index])
        except BaseException:
            if running:
                engine.abort_request(list(running))
            raise
        return [completions[index] for index in range(len(conversations))]

    def _completion(self, conversation, prompt: str, given: dict[str, Any], generated,
                    finish_reason: str | None) -> Completion:
        ids = list(generated.token_ids)
        raw = self.tokenizer.decode(ids, skip_special_tokens=False)
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        return Completion(text=text, raw=raw, tool_calls=self._parse_tool_calls(raw, prompt, conversation),
                          extra={"finish_reason": finish_reason} if finish_reason else {},
                          prompt_tokens=len(given["prompt_token_ids"]), generated_tokens=len(ids))
