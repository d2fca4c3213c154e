"""Generating one prediction per dataset row, in batches, with resume and a progress bar."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from apibank.benchmark import BUDGET_MARGIN, MODEL_FORMAT, UNSIZED_MAX_NEW_TOKENS
from apibank.generate.backends import Backend, Completion, DecodingSettings
from apibank.generate.backends.openai import InterruptedBatch
from apibank.generate.conversation import Conversation, build_conversation
from apibank.generate.predictions import PredictionWriter, check_resumable, repair
from apibank.generate.stops import answer_text, stops_for
from apibank.notation import call_text


def token_budgets(backend: Backend, rows: Sequence[Mapping[str, Any]], margin: int = BUDGET_MARGIN) -> tuple[tuple[str, int], ...]:
    """Per level and sample kind, the longest gold answer in ``backend``'s tokens plus ``margin``.

    Pass every row of a level (not a ``--limit`` subset), so that a subset decodes exactly as the full run.
    """
    longest: dict[str, int] = {}
    keys = [f"level-{row['level']}/{row['kind']}" for row in rows]
    counts = backend.token_counts([row["expected_output"] for row in rows]) if rows else []
    for key, count in zip(keys, counts):
        longest[key] = max(longest.get(key, 0), count)
    return tuple(sorted((key, count + margin) for key, count in longest.items()))


def sized_settings(
    backend: Backend,
    rows: Sequence[Mapping[str, Any]],
    fmt: str,
    *,
    max_new_tokens: int | None = None,
    stop: Sequence[str] | None = None,
) -> DecodingSettings:
    """Decoding settings whose per-kind budgets come from the gold answers of ``rows``, capped by
    ``max_new_tokens``: the one way evaluate and ``apibank_generate`` size answers."""
    budgets = token_budgets(backend, rows)
    cap = max_new_tokens if max_new_tokens is not None else max((value for _, value in budgets),
                                                                default=UNSIZED_MAX_NEW_TOKENS)
    if stop is None:
        stop = stops_for(backend, rows, fmt)
    return DecodingSettings(max_new_tokens=cap, stop=tuple(stop), budgets=budgets)


def dialogue_of(row_id: str) -> str:
    return row_id.split("#", 1)[0]


def generation_order(conversations: Sequence[Conversation], prompts: Sequence[str]) -> list[int]:
    """Rows of one dialogue and kind next to each other, shortest prompt first (each prompt extends the
    previous one, so its KV cache is reused); the groups longest first, so that batches run ordered by
    length and an out-of-memory error comes at the first batch rather than the last."""
    groups: dict[tuple[str, str], list[int]] = {}
    for index, conversation in enumerate(conversations):
        groups.setdefault((dialogue_of(conversation.row_id), conversation.kind), []).append(index)
    ordered = sorted(groups.values(), key=lambda members: -max(len(prompts[i]) for i in members))
    return [i for members in ordered for i in sorted(members, key=lambda i: len(prompts[i]))]


def finish(conversation: Conversation, completion: Completion, settings: DecodingSettings) -> tuple[str, Any]:
    """The prediction text for a completion, and the native tool call it came from (if any)."""
    if conversation.format == "tools" and completion.tool_calls:
        name, arguments = completion.tool_calls[0]
        return call_text(name, arguments), {"name": name, "arguments": arguments}
    return answer_text(completion.text, settings.stop), None


def usage_of(completion: Completion, seconds_share: float) -> dict[str, Any]:
    """A record's usage: the backend's own counts, else an endpoint's ``usage`` reply, else unknown (None);
    seconds: the backend's per-row figure, else an equal share of the batch's wall time."""
    served = completion.extra.get("usage") or {}
    prompt = completion.prompt_tokens if completion.prompt_tokens is not None else served.get("prompt_tokens")
    generated = completion.generated_tokens
    if generated is None:
        generated = served.get("completion_tokens")
    seconds = completion.seconds if completion.seconds is not None else completion.extra.get("seconds", seconds_share)
    usage = {"prompt_tokens": prompt, "generated_tokens": generated, "seconds": round(seconds, 4)}
    if completion.extra.get("finish_reason"):  # eos, stop or length: why the answer ended
        usage["finish_reason"] = completion.extra["finish_reason"]
    return usage


def model_label(backend: Backend) -> str:
    info = backend.info()
    return str(info.get("model_id"))


def generate_predictions(
    rows: Sequence[Mapping[str, Any]],
    backend: Backend,
    *,
    fmt: str = MODEL_FORMAT,
    settings: DecodingSettings | None = None,
    batch_size: int = 8,
    output_path: str | os.PathLike[str] | None = None,
    icl: bool = False,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """One prediction record per row, in row order.

    With ``output_path``, records are appended to that JSON-lines file batch by batch; rows whose id
    is already there are skipped (resume). Rows are ordered by :func:`generation_order`. Without
    ``settings``, the token budgets are sized from the gold answers of ``rows``. Each record carries
    its usage: ``prompt_tokens``, ``generated_tokens`` and ``seconds``.
    """
    settings = settings or sized_settings(backend, rows, fmt)
    label = model_label(backend)
    run = {"format": fmt, "decoding": settings.as_dict(), "model": label}
    done: dict[str, dict[str, Any]] = {}
    path = Path(output_path) if output_path is not None else None
    if path is not None:
        existing = repair(path)
        check_resumable(existing, run, path)
        done = {record["id"]: record for record in existing}
    pending = [row for row in rows if row["id"] not in done]
    conversations = [build_conversation(row, fmt, icl=icl) for row in pending]
    prompts = [backend.render(conversation) for conversation in conversations]
    order = generation_order(conversations, prompts)

    from tqdm.auto import tqdm

    bar = tqdm(
        total=len(rows), initial=len(rows) - len(pending), unit="sample", desc=f"generate ({label})",
        disable=not progress, dynamic_ncols=True, mininterval=0.5,
    )
    writer = PredictionWriter(path) if path is not None else None
    produced: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    try:
        for start in range(0, len(order), max(1, batch_size)):
            chunk = order[start : start + max(1, batch_size)]
            batch = [conversations[i] for i in chunk]
            interrupted: InterruptedBatch | None = None
            batch_started = time.perf_counter()
            try:
                completions = backend.generate(batch, [prompts[i] for i in chunk], settings)
            except InterruptedBatch as error:  # Ctrl-C: save the responses that came back, then stop
                interrupted, kept = error, sorted(error.completed)
                chunk, batch = [chunk[k] for k in kept], [batch[k] for k in kept]
                completions = [error.completed[k] for k in kept]
            batch_seconds = time.perf_counter() - batch_started
            records = []
            for i, conversation, completion in zip(chunk, batch, completions):
                prediction, tool_call = finish(conversation, completion, settings)
                record = {
                    "id": conversation.row_id,
                    "prediction": prediction,
                    "prompt": prompts[i],
                    "raw_output": completion.raw,
                    **run,
                    "level": conversation.level,
                    "kind": conversation.kind,
                    **usage_of(completion, batch_seconds / max(1, len(chunk))),
                }
                if tool_call is not None:
                    record["tool_call"] = tool_call
                records.append(record)
                produced[record["id"]] = record
            if writer is not None:
                writer.write(records)
            bar.update(len(chunk))
            elapsed = time.perf_counter() - started
            bar.set_postfix(rate=f"{len(produced) / elapsed:.2f}/s" if elapsed > 0 else "-", refresh=False)
            if interrupted is not None:
                raise interrupted
    finally:
        bar.close()
        if writer is not None:
            writer.close()
    merged = {**done, **produced}
    return [merged[row["id"]] for row in rows]
