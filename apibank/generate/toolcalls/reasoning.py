"""Reasoning ("thinking") text, told apart from the answer in one place for every family.

Thinking text stays in the raw output a run saves, but it is never read as a call or as the answer:
a model that thinks ``{"name": "QueryMeeting", ...}`` before answering in prose has made no call.

The blocks recognised (:data:`BLOCKS`):

* ``<think>`` ... ``</think>``: Qwen3, QwQ, DeepSeek-R1 and its distills, SmolLM3 (``/think``), Granite
  3.3, Phi-4-reasoning. Their templates often open the block in the prompt (``<|im_start|>assistant\\n
  <think>\\n``), so a closing tag with no opening one before it ends a block that began the output;
* ``◁think▷`` ... ``◁/think▷``: Kimi thinking models;
* ``<|channel>thought`` ... ``<channel|>``: Gemma 4;
* GPT-OSS (harmony): every ``<|channel|>analysis<|message|>`` message, to its ``<|end|>``.

A block left open (the model was cut off while thinking) makes the rest of the text reasoning: what
follows an unfinished thought is no answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Block:
    """One family's reasoning block: ``opener`` ... ``closer``; ``prefilled``: a template may write the
    opener into the prompt, so a lone closer ends a block that began the output."""

    name: str
    opener: str
    closer: str
    prefilled: bool


BLOCKS = (
    Block("think", "<think>", "</think>", prefilled=True),
    Block("kimi", "◁think▷", "◁/think▷", prefilled=True),
    Block("gemma4", "<|channel>thought", "<channel|>", prefilled=False),
    Block("harmony", "<|channel|>analysis<|message|>", "<|end|>", prefilled=False),
)

_HARMONY_FINAL = re.compile(r"<\|channel\|>\s*final\s*(?:<\|constrain\|>\s*\S*\s*)?<\|message\|>(.*?)"
                            r"(?:<\|return\|>|<\|end\|>|<\|call\|>|$)", re.DOTALL)


def _split(text: str, block: Block) -> tuple[list[str], str]:
    reasoning: list[str] = []
    answer: list[str] = []
    position = 0
    if block.prefilled:
        closer = text.find(block.closer)
        opener = text.find(block.opener)
        if closer >= 0 and (opener < 0 or closer < opener):
            reasoning.append(text[:closer])
            position = closer + len(block.closer)
    while True:
        opener = text.find(block.opener, position)
        if opener < 0:
            answer.append(text[position:])
            break
        answer.append(text[position:opener])
        closer = text.find(block.closer, opener + len(block.opener))
        if closer < 0:
            reasoning.append(text[opener + len(block.opener):])
            break
        reasoning.append(text[opener + len(block.opener):closer])
        position = closer + len(block.closer)
    return reasoning, "".join(answer)


def split_reasoning(text: str) -> tuple[str, str]:
    """``(reasoning, rest)`` of one raw model output: every reasoning block removed from the rest."""
    reasoning: list[str] = []
    rest = text or ""
    for block in BLOCKS:
        if block.opener in rest or (block.prefilled and block.closer in rest):
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
