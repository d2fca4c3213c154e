"""Every call reader under hostile text: the worst wall seconds per family, and a corpus of mutated gold calls.

Two kinds of input per family (``READERS``, spec files and Python readers alike):

* every unit of the families' call syntaxes (openers, closers, whole calls, brackets, quotes) repeated to
  ``MAX_TEXT_CHARS``, read with the family named (``--tool-parser``);
* the gold call of every API row written in the family's native format (the writers of
  ``tests/support/native_calls.py``), mutated as the judge's hostile corpus mutates predictions:
  cut at a random point, behind 5,000 ``[``, a stray character inserted, repeated 2 to 40 times, quotes
  swapped, noise appended.

Printed per family: inputs, exceptions (must be 0), calls read from cut texts that are not the gold call
(must be 0), the worst seconds and which input. Timings depend on the machine: compare runs of one machine.

    python benchmarks/bench_toolcall_readers.py --data-dir ../shared/apibank-upstream [--rows 779]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests")]

UNITS = ["[", "{", "(", '"', "\\", '{"name": ', "<tool_call>", "</tool_call>", "<tool_call>{}</tool_call>",
         '<tool_call>{"name":"X","arguments":{}}</tool_call>', "<tool_call>X\n<arg_key>k</arg_key><arg_value>",
         "<tool_call>X<arg_key>k</arg_key><arg_value>v</arg_value>", "<function=X><parameter=k>", "<parameter=k>",
         "<|tool_call>call:X{", '<|tool_call>call:X{a:<|"|>', "{a:", '<|"|>', "to=functions.X<|message|>",
         "to=functions.X", "<｜tool▁call▁begin｜>X<｜tool▁sep｜>{", "<｜tool▁sep｜>X```json",
         "<｜tool▁call▁begin｜>X<｜tool▁sep｜>{}<｜tool▁call▁end｜>",
         "<|tool_call_begin|>functions.X:0<|tool_call_argument_begin|>{", "<|tool_call_end|>", ">>>X\n{",
         "functools[", "[TOOL_CALLS]", "[TOOL_CALLS]X[ARGS]{", "<|action_start|><|plugin|>{", "<|tool_call|>[",
         "[X(", "functions.X:", "```python\n", "<think>", "</think>", "<|channel|>analysis<|message|>"]
NOISE = ["\ud800", "\udfff", "\x00", "\x01", "\x02", "\u202e", "\ufeff", "é", "日", "<", ">", '"', "{", "]"]


def mutations(text: str, generator: random.Random) -> list[tuple[str, str]]:
    position = generator.randrange(len(text) + 1)
    return [
        ("cut", text[:generator.randrange(len(text))]),
        ("brackets", "[" * 5000 + text),
        ("stray", text[:position] + generator.choice(NOISE) + text[position:]),
        ("repeated", text * generator.randint(2, 40)),
        ("quotes", text.replace('"', "'", generator.randint(1, 3))),
        ("noise", text + "".join(chr(generator.randrange(0x20, 0x2FFF)) for _ in range(generator.randint(1, 300)))),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--rows", type=int, default=779, help="API rows of the mutation corpus (default: all 779)")
    parser.add_argument("--families", nargs="*", help="only these families")
    args = parser.parse_args(argv)

    import apibank
    from apibank.generate.toolcalls import READERS, read_tool_calls
    from apibank.generate.toolcalls.generic import MAX_TEXT_CHARS
    from apibank.notation import parse_request
    from support.native_calls import WRITERS

    from apibank.benchmark import LEVELS

    rows = [row for level in LEVELS for row in apibank.iter_rows(level, args.data_dir)
            if row["kind"] == "api"][: args.rows]
    gold = [parse_request(row["expected_output"])[:2] for row in rows]
    print(f"{'family':18} {'kind':6} {'inputs':>7} {'errors':>6} {'wrong':>5} {'worst s':>8}  worst input")
    for family in args.families or READERS.names():
        worst = (0.0, "")
        errors = 0
        for unit in UNITS:
            text = (unit * (MAX_TEXT_CHARS // len(unit) + 1))[:MAX_TEXT_CHARS]
            started = time.perf_counter()
            try:
                read_tool_calls(text, parser=family)
            except Exception:  # counted: a reader must never raise
                errors += 1
            worst = max(worst, (time.perf_counter() - started, f"{unit!r} x {len(text) // len(unit)}"))
        kind = "spec" if READERS.get(family).response_template is not None else "python"
        print(f"{family:18} {kind:6} {len(UNITS):>7} {errors:>6} {'':>5} {worst[0]:>8.3f}  {worst[1]}")
        generator = random.Random(f"{family}-corpus")
        worst, errors, wrong, count = (0.0, ""), 0, 0, 0
        for call in gold:
            for how, text in mutations(WRITERS[family]([call]), generator):
                count += 1
                started = time.perf_counter()
                try:
                    calls = read_tool_calls(text, parser=family)
                except Exception:
                    errors += 1
                    continue
                worst = max(worst, (time.perf_counter() - started, how))
                wrong += how == "cut" and calls not in ([], [call])
        print(f"{'':18} {'corpus':6} {count:>7} {errors:>6} {wrong:>5} {worst[0]:>8.3f}  {worst[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
