"""Generation throughput of the transformers backend at batch sizes 1, 8 and 32, as ratios against batch size 1.

By default on a tiny random Llama (2 layers, hidden 32, tokenizer trained on the spot) over real
level-1/2/3 prompts, so it runs offline on a CPU in well under a minute; ``--model`` measures a real
model instead. Greedy outputs are identical at every batch size (checked), so every run does the
same work.

    python benchmarks/bench_generation.py [--data-dir DIR] [--rows 64] [--max-new-tokens 16]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None, help="local copy of the upstream API-Bank folder")
    parser.add_argument("--model", default=None, help="model id or path (default: a tiny random model)")
    parser.add_argument("--format", dest="fmt", default="chat", choices=("paper", "chat", "tools"))
    parser.add_argument("--rows", type=int, default=64, help="number of rows (a multiple of 32 keeps batches full)")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args()

    import torch

    from apibank.generate import (
        DecodingSettings,
        TransformersBackend,
        build_conversation,
        generate_predictions,
    )
    from apibank.generate.tiny import build_tiny_model
    from apibank.pipeline import load_rows

    per_level = -(-args.rows // 6)  # API-call and response rows of three levels
    rows = load_rows(None, args.data_dir, limit=per_level)[: args.rows]
    with tempfile.TemporaryDirectory() as scratch:
        model = args.model
        if model is None:
            corpus = [row["instruction"] + row["input"] + row["expected_output"] for row in rows[:12]]
            model = str(build_tiny_model(Path(scratch) / "tiny", corpus))
        backend = TransformersBackend(model, dtype=args.dtype, device=args.device)
        settings = DecodingSettings(max_new_tokens=args.max_new_tokens)
        prompt_tokens = sum(
            len(backend.tokenizer(backend.render(build_conversation(row, args.fmt)))["input_ids"]) for row in rows
        )
        generate_predictions(rows[:2], backend, fmt=args.fmt, settings=settings, batch_size=2, progress=False)  # warm-up
        timings = {}
        outputs = {}
        for batch_size in args.batch_sizes:
            start = time.perf_counter()
            records = generate_predictions(rows, backend, fmt=args.fmt, settings=settings, batch_size=batch_size,
                                           progress=False)
            timings[batch_size] = time.perf_counter() - start
            outputs[batch_size] = [r["raw_output"] for r in records]
    same = all(outputs[b] == outputs[args.batch_sizes[0]] for b in args.batch_sizes)
    base = args.batch_sizes[0]
    print(f"model: {args.model or 'tiny random Llama (2 layers, hidden 32)'}; format {args.fmt}; {len(rows)} rows, "
          f"{prompt_tokens / len(rows):.0f} prompt tokens on average; max_new_tokens {args.max_new_tokens}; "
          f"device {args.device}; torch threads {torch.get_num_threads()}")
    print(f"{'batch size':>10}  {'seconds':>8}  {'samples/s':>9}  {'vs batch ' + str(base):>11}")
    for batch_size in args.batch_sizes:
        rate = len(rows) / timings[batch_size]
        print(f"{batch_size:>10}  {timings[batch_size]:>8.2f}  {rate:>9.2f}  {timings[base] / timings[batch_size]:>10.2f}x")
    print(f"greedy outputs identical across batch sizes: {same}")


if __name__ == "__main__":
    main()
