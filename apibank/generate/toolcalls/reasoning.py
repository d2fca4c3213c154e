"""Reasoning ("thinking") text, told apart from the answer in one place for every family.

Thinking text stays in the raw output a run saves, but it is never read as a call or as the answer:
a model that thinks ``{"name": "QueryMeeting", ...}`` before answering in prose has made no call.

The blocks recognised (:data:`BLOCKS`) are data, ``reasoning_markers.json`` beside this module: the start
and end markers of every reasoning parser vLLM 0.32.0 registers (``<think>`` ... ``</think>`` for most,
Seed's ``<seed:think>``, Mistral's ``[THINK]``, Cohere's ``<|START_THINKING|>``, GPT-OSS's analysis
channel, ...), each with the vLLM parsers that use it, and Apriel 1.6's, which vLLM has no parser for (its
template opens ``Here are my reasoning steps:`` in the prompt; the answer follows ``[BEGIN FINAL RESPONSE]``). A family whose template opens the block in the
prompt (``<|im_start|>assistant\n<think>\n``) has ``prefilled`` markers: a closing marker with no opening
one before it ends a block that began the output. The same markers tell whether a chat template makes its
model think (:data:`THINKING_OPENERS`, :data:`THINKING_CLOSERS`, :data:`THINKING_SWITCHES`, read by
:mod:`apibank.generate.templates`).

A block left open (the model was cut off while thinking) makes the rest of the text reasoning: what
follows an unfinished thought is no answer.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property
from importlib import resources


@dataclass(frozen=True)
class Block:
    """One family's reasoning block: any of ``openers`` ... any of ``closers``; ``prefilled``: a template
    may write the opener into the prompt, so a lone closer ends a block that began the output;
    ``shared_closer``: the closer also ends messages that are no reasoning (harmony's ``<|end|>``), so it
    says nothing about a prompt; ``parsers``: the vLLM reasoning parsers that write these markers."""

    name: str
    openers: tuple[str, ...]
    closers: tuple[str, ...]
    prefilled: bool
    shared_closer: bool = False
    parsers: tuple[str, ...] = ()

    @cached_property
    def opener_re(self) -> re.Pattern[str]:
        return _alternatives(self.openers)

    @cached_property
    def closer_re(self) -> re.Pattern[str]:
        return _alternatives(self.closers)


def _alternatives(markers: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(marker) for marker in sorted(markers, key=len, reverse=True)))


def _load() -> tuple[dict, tuple[Block, ...]]:
    data = json.loads((resources.files("apibank.generate.toolcalls") / "reasoning_markers.json").read_text("utf-8"))
    blocks = tuple(Block(entry["name"], tuple(entry["open"]), tuple(entry["close"]), entry["prefilled"],
                         entry.get("shared_closer", False), tuple(entry["parsers"])) for entry in data["blocks"])
    return data, blocks


MARKERS, BLOCKS = _load()
THINKING_OPENERS = tuple(opener for block in BLOCKS for opener in block.openers)
THINKING_CLOSERS = tuple(closer for block in BLOCKS if not block.shared_closer for closer in block.closers)
# Template variables that switch a thinking mode (Qwen3's enable_thinking, Seed-OSS's thinking_budget).
THINKING_SWITCHES = tuple(MARKERS["switches"])
# Template variables that select a thinking mode at all (DeepSeek's ``thinking``, GPT-OSS's ``reasoning_effort``), as
# variables: not inside quotes or a tag (``block['thinking']``, ``<thinking>``).
MODE_VARIABLE = re.compile(r"(?<![\w'\"<])(?:%s)(?![\w'\">])" % "|".join(map(re.escape, MARKERS["mode_variables"])))

_HARMONY_FINAL = re.compile(r"<\|channel\|>\s*final\s*(?:<\|constrain\|>\s*\S*\s*)?<\|message\|>(.*?)"
                            r"(?:<\|return\|>|<\|end\|>|<\|call\|>|$)", re.DOTALL)


def _split(text: str, block: Block) -> tuple[list[str], str]:
    reasoning: list[str] = []
    answer: list[str] = []
    position = 0
    openers, closers = block.opener_re, block.closer_re
    if block.prefilled:
        closer = closers.search(text)
        opener = openers.search(text)
        if closer and (opener is None or closer.start() < opener.start()):
            reasoning.append(text[:closer.start()])
            position = closer.end()
    while True:
        opener = openers.search(text, position)
        if opener is None:
            answer.append(text[position:])
            break
        answer.append(text[position:opener.start()])
        closer = closers.search(text, opener.end())
        if closer is None:
            reasoning.append(text[opener.end():])
            break
        reasoning.append(text[opener.end():closer.start()])
        position = closer.end()
    return reasoning, "".join(answer)


def split_reasoning(text: str) -> tuple[str, str]:
    """``(reasoning, rest)`` of one raw model output: every reasoning block removed from the rest."""
    reasoning: list[str] = []
    rest = text or ""
    for block in BLOCKS:
        if any(opener in rest for opener in block.openers) or (
                block.prefilled and any(closer in rest for closer in block.closers)):
            found, rest = _split(rest, block)
            reasoning += found
    return "\n".join(part.strip() for part in reasoning if part.strip()), rest


def answer_of(text: str, raw: str | None = None) -> str:
    """The answer of a completion: reasoning removed, and for GPT-OSS the ``final`` channel's message
    (read from ``raw``, the output with special tokens kept, since harmony's markers are special tokens
    that ``text`` lacks)."""
    if raw and "<|channel|>" in raw:
        final = _HARMONY_FINAL.search(split_reasoning(raw)[1])
        return final.group(1) if final else ""
    return split_reasoning(text)[1]
