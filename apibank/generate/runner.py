"""Generating one prediction per dataset row, in batches, with resume and a progress bar."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from apibank.generate.backends import Backend, Completion, DecodingSettings
from apibank.generate.backends.openai import InterruptedBatch
from apibank.generate.conversation import Conversation, build_conversation
from apibank.generate.predictions import PredictionWriter, check_resumable, repair
from apibank.generate.toolcalls import call_text

# Where a paper-format answer ends: the next turn of the transcript the model would go on writing.
PAPER_STOPS = ("\nUser:", "\nAI:", "\nAPI:", "\nGenerate API Request", "\nGenerate AI Response")


def default_stops(fmt: str) -> tuple[str, ...]:
    """Chat formats end at the template's end-of-turn token (EOS); the paper format needs strings."""
    return PAPER_STOPS if fmt == "paper" else ()


def cut_at_stop(text: str, stops: Iterable[str]) -> str:
    cut = len(text)
    for stop in stops:
        index = text.find(stop)
        if index >= 0:
            cut = min(cut, index)
    return text[:cut]


def finish(conversation: Conversation, completion: Completion, settings: DecodingSettings) -> tuple[str, Any]:
    """The prediction text for a completion, and the native tool call it came from (if any)."""
    if conversation.format == "tools" and completion.tool_calls:
        name, arguments = completion.tool_calls[0]
        return call_text(name, arguments), {"name": name, "arguments": arguments}
    return cut_at_stop(completion.text, settings.stop).strip(), None


def model_label(backend: Backend) -> str:
    info = backend.info()
    return str(info.get("model_id"))


def generate_predictions(
    rows: Sequence[Mapping[str, Any]],
    backend: Backend,
    *,
    fmt: str = "chat",
    settings: DecodingSettings | None = None,
    batch_size: int = 8,
    output_path: str | os.PathLike[str] | None = None,
    icl: bool = False,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """One prediction record per row, in row order.

    With ``output_path``, records are appended to that JSON-lines file batch by batch; rows whose id
    is already there are skipped (resume). Rows are batched longest prompt first, which keeps
    padding low and meets an out-of-memory error at the first batch rather than the last.
    """
    settings = settings or DecodingSettings(stop=default_stops(fmt))
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
    order = sorted(range(len(conversations)), key=lambda i: len(prompts[i]), reverse=True)

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
            try:
                completions = backend.generate(batch, [prompts[i] for i in chunk], settings)
            except InterruptedBatch as error:  # Ctrl-C: save the responses that came back, then stop
                interrupted, kept = error, sorted(error.completed)
                chunk, batch = [chunk[k] for k in kept], [batch[k] for k in kept]
                completions = [error.completed[k] for k in kept]
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
