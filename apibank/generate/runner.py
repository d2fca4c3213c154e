"""Generating one prediction per dataset row, in batches, with resume and a progress bar.

Each prediction is appended to the predictions file the moment its row is done: as the backend
reports it (``on_completion``, see :meth:`Backend.generate <apibank.generate.backends.base.Backend.generate>`),
else when the batch ends. Ctrl-C loses only the rows still in flight.
"""

from __future__ import annotations

import inspect
import os
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from apibank.benchmark import BUDGET_MARGIN, MODEL_FORMAT, THINKING_BUDGET, UNSIZED_MAX_NEW_TOKENS
from apibank.generate.backends import Backend, Completion, DecodingSettings
from apibank.generate.backends.base import OnCompletion
from apibank.generate.conversation import Conversation, build_conversation
from apibank.generate.interrupts import HeldInterrupt
from apibank.generate.predictions import PredictionWriter, check_resumable, repair
from apibank.generate.stops import answer_text, renders_plain_text, stops_for
from apibank.generate.toolcalls import MAX_TEXT_CHARS, answer_of
from apibank.generate.toolcalls.reasoning import BLOCKS
from apibank.notation import UnreadableArguments, call_text, unreadable_call_text

# The most characters of a prediction or raw output a record keeps (a server may send megabytes). Cut
# answers get ``"truncated": true``; the cap is twice what the judge reads (MAX_PREDICTION_CHARS), and
# what the tool-call readers look at, so a cut answer is judged exactly as the whole one.
MAX_STORED_CHARS = MAX_TEXT_CHARS


def token_budgets(backend: Backend, rows: Sequence[Mapping[str, Any]], margin: int = BUDGET_MARGIN) -> tuple[tuple[str, int], ...]:
    """Per level and sample kind, the longest gold answer in ``backend``'s tokens plus ``margin``.

    Pass every row of a level (not a ``--limit`` subset), so that a subset decodes exactly as the full run.
    """
    longest: dict[str, int] = {}
    keys = [DecodingSettings.budget_key(row["level"], row["kind"]) for row in rows]
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
    thinking_budget: int | None = None,
) -> DecodingSettings:
    """Decoding settings whose per-kind budgets come from the gold answers of ``rows``, capped by
    ``max_new_tokens``: the one way evaluate and ``apibank_generate`` size answers. A model that thinks
    before answering (:func:`thinking_of`) gets ``thinking_budget`` more tokens per answer (default
    :data:`~apibank.benchmark.THINKING_BUDGET`; 0 for a model that does not think)."""
    budgets = token_budgets(backend, rows)
    cap = max_new_tokens if max_new_tokens is not None else max((value for _, value in budgets),
                                                                default=UNSIZED_MAX_NEW_TOKENS)
    if stop is None:
        stop = stops_for(backend, rows, fmt)
    thinking_budget = thinking_plan(thinking_of(backend, fmt), thinking_budget)["budget"]
    return DecodingSettings(max_new_tokens=cap, stop=tuple(stop), budgets=budgets, thinking_budget=thinking_budget)


def thinking_plan(why: str | None, given: int | None) -> dict[str, Any]:
    """What a run records under ``thinking``: the reasoning ``budget`` added to every answer (``given``, else
    :data:`~apibank.benchmark.THINKING_BUDGET` for a model that thinks first, ``why`` saying so, and 0 for
    one that does not), ``why`` and whether the budget was ``given``: the one rule for evaluate and agent."""
    budget = given if given is not None else (THINKING_BUDGET if why else 0)
    return {"budget": budget, "why": why, "given": given is not None}


def thinking_of(backend: Backend, fmt: str) -> str | None:
    """Why ``backend``'s model thinks before answering in format ``fmt`` (its chat template and the options
    given to it say so), or None: it does not, or the backend cannot tell (an endpoint's template)."""
    thinking = getattr(backend, "thinking", None)
    return thinking(fmt) if callable(thinking) else None


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


def finish(conversation: Conversation, completion: Completion, settings: DecodingSettings,
           prompt: str = "") -> tuple[str, Any]:
    """The prediction text for a completion, and the native tool call it came from (if any). A completion
    its token budget cut inside a reasoning block (:func:`cut_inside_reasoning`; ``prompt``: the text the
    model continued) has no answer and no call: its prediction is empty (its raw output is kept)."""
    if cut_inside_reasoning(completion, settings, prompt):
        return "", None
    if conversation.format == "tools" and completion.tool_calls:
        name, arguments = completion.tool_calls[0]
        if isinstance(arguments, UnreadableArguments):  # kept as written; the judge names the fault
            return unreadable_call_text(name, arguments), {"name": name, "arguments_text": str(arguments),
                                                           "error": arguments.error}
        return call_text(name, arguments), {"name": name, "arguments": arguments}
    text = completion.text
    if completion.extra.get("finish_reason") == "length":
        text = text[: len(text) - len(partial_marker(text))]
    return answer_text(answer_of(text, completion.raw), settings.stop), None


def cut_inside_reasoning(completion: Completion, settings: DecodingSettings, prompt: str = "") -> bool:
    """Whether ``completion`` ended by its token budget (``finish_reason`` ``length``) inside a reasoning
    block, read from its text and its raw output (:func:`cut_while_reasoning`): nothing in it is an answer
    or a call (the prediction runner's rows and the agent's steps alike)."""
    if completion.extra.get("finish_reason") != "length":
        return False
    thinking = bool(settings.thinking_budget)
    return any(cut_while_reasoning(output, prompt, thinking) for output in (completion.text, completion.raw))


# The shortest piece of a reasoning marker taken for one at the end of a cut output ("<" alone is not)
MIN_PARTIAL_MARKER = 2


def partial_marker(text: str) -> str:
    """The start of a reasoning marker (``<thin``, ``</thi``, ``◁/th``) that ends ``text``: what a cut
    output holds when its budget ran out while the model wrote the marker; "" when none does."""
    markers = [marker for block in BLOCKS for marker in (*block.openers, *block.closers)]
    for size in range(max(len(marker) for marker in markers) - 1, MIN_PARTIAL_MARKER - 1, -1):
        if len(text) >= size and any(marker.startswith(text[-size:]) for marker in markers if len(marker) > size):
            return text[-size:]
    return ""


def cut_while_reasoning(output: str | None, prompt: str = "", thinking: bool = False) -> bool:
    """Whether an output cut by its token budget is all reasoning although it holds no opening marker of any
    family's block (:data:`~apibank.generate.toolcalls.reasoning.BLOCKS`): for a block a template opens in
    the prompt and the output has no closer of, ``prompt`` left it open, or a model that thinks first
    (``thinking``: the run gave it a thinking budget) was writing its closer when cut (``</thin``). A block
    the output opened itself is the reasoning reader's to cut (what precedes it stays the answer)."""
    output = output or ""
    tail = partial_marker(output)
    for block in BLOCKS:
        if not block.prefilled or any(marker in output for marker in (*block.openers, *block.closers)):
            continue
        in_prompt = max(prompt.rfind(opener) for opener in block.openers)
        if in_prompt >= 0 and not any(closer in prompt[in_prompt:] for closer in block.closers):
            return True
        if thinking and tail and any(closer.startswith(tail) for closer in block.closers):
            return True
    return False


def cut_texts(value: Any) -> tuple[Any, bool]:
    """``value`` (JSON-ready) with every string in it, keys included, cut to :data:`MAX_STORED_CHARS`, and
    whether any was cut; ``value`` itself is left as it is."""
    if isinstance(value, str):
        return (value[:MAX_STORED_CHARS], True) if len(value) > MAX_STORED_CHARS else (value, False)
    if isinstance(value, dict):
        items = [(cut_texts(key), cut_texts(item)) for key, item in value.items()]
        return {key: item for (key, _), (item, _) in items}, any(a or b for (_, a), (_, b) in items)
    if isinstance(value, (list, tuple)):
        items = [cut_texts(item) for item in value]
        return [item for item, _ in items], any(cut for _, cut in items)
    return value, False


def stored(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with the model's output in it (prediction, raw output, tool call) cut to
    :data:`MAX_STORED_CHARS`, flagged ``truncated`` when cut."""
    for key in ("prediction", "raw_output", "tool_call"):
        if key in record:
            record[key], cut = cut_texts(record[key])
            if cut:
                record["truncated"] = True
    return record


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


def run_identity(backend: Backend, rows: Sequence[Mapping[str, Any]], fmt: str) -> dict[str, Any]:
    """What predictions kept by a resumed run must share with it, besides the model, the format and the
    decoding: the backend, the model's revision and dtype, and the SHA-256 of the chat template the prompts
    go through (None: sent as plain text, or templated by a server)."""
    info = backend.info()
    plain = renders_plain_text(backend, rows)  # renders a row first: that installs a --chat-template file
    template = None
    if not (fmt == "paper" and plain) and hasattr(backend, "template_info"):
        template = backend.template_info().get("chat_template_sha256")
    return {"backend": info.get("backend"), "revision": info.get("model_revision"), "dtype": info.get("dtype"),
            "chat_template_sha256": template}


def reports_completions(backend: Backend) -> bool:
    """Whether ``backend.generate`` takes ``on_completion`` (a backend written before it was added does not:
    its rows are saved when its batch ends)."""
    try:
        parameters = inspect.signature(backend.generate).parameters
    except (TypeError, ValueError):
        return False
    return "on_completion" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


def generate_batch(backend: Backend, conversations: Sequence[Conversation], prompts: Sequence[str],
                   settings: DecodingSettings, on_completion: OnCompletion) -> list[Completion]:
    """``backend.generate``, with ``on_completion`` where the backend takes it."""
    if reports_completions(backend):
        return backend.generate(conversations, prompts, settings, on_completion=on_completion)
    return backend.generate(conversations, prompts, settings)


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

    With ``output_path``, each record is appended to that JSON-lines file as soon as its row is done;
    rows whose id is already there are skipped (resume), once the records there are found to come from
    the same run (:func:`~apibank.generate.predictions.check_resumable`). Rows are ordered by
    :func:`generation_order`. Without ``settings``, the token budgets are sized from the gold answers of
    ``rows``. Each record carries its usage: ``prompt_tokens``, ``generated_tokens`` and ``seconds``.
    """
    settings = settings or sized_settings(backend, rows, fmt)
    label = model_label(backend)
    run = {"format": fmt, "decoding": settings.as_dict(), "model": label, "engine": run_identity(backend, rows, fmt)}
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

    def save(i: int, completion: Completion, seconds_share: float) -> None:
        conversation = conversations[i]
        prompt = completion.extra.get("prompt", prompts[i])  # the prompt sent, where the backend adapted it
        prediction, tool_call = finish(conversation, completion, settings, prompt if isinstance(prompt, str) else "")
        record = {
            "id": conversation.row_id,
            "prediction": prediction,
            "prompt": prompt,
            "raw_output": completion.raw,
            **run,
            "level": conversation.level,
            "kind": conversation.kind,
            **usage_of(completion, seconds_share),
        }
        if completion.extra.get("template_adaptations"):
            record["template_adaptations"] = list(completion.extra["template_adaptations"])
        if tool_call is not None:
            record["tool_call"] = tool_call
        record = stored(record)
        with HeldInterrupt():  # a Ctrl-C here waits until the line is written whole
            produced[record["id"]] = record
            if writer is not None:
                writer.write([record], sync=False)  # in the OS's hands at once; on disk at the batch's end
        bar.update(1)
        elapsed = time.perf_counter() - started
        bar.set_postfix(rate=f"{len(produced) / elapsed:.2f}/s" if elapsed > 0 else "-", refresh=False)

    try:
        for start in range(0, len(order), max(1, batch_size)):
            chunk = order[start : start + max(1, batch_size)]
            saved: set[int] = set()
            last = time.perf_counter()  # when the batch started or its last row was reported

            def on_completion(position: int, completion: Completion) -> None:
                nonlocal last
                now = time.perf_counter()
                # a row without its own seconds: the time since the batch's previous row was done
                save(chunk[position], completion, now - last)
                saved.add(position)
                last = now

            completions = generate_batch(backend, [conversations[i] for i in chunk], [prompts[i] for i in chunk],
                                         settings, on_completion)
            rest = [position for position in range(len(chunk)) if position not in saved]
            share = (time.perf_counter() - last) / max(1, len(rest))
            for position in rest:
                save(chunk[position], completions[position], share)
            if writer is not None:
                writer.sync()
    finally:
        bar.close()
        if writer is not None:
            writer.close()
    merged = {**done, **produced}
    return [merged[row["id"]] for row in rows]
