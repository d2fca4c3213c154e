"""The stop rule: where a generated answer ends, and which stop strings a prompt format uses.

Every way of running a model cuts answers here: the backends while decoding (transformers) or after
the fact (vLLM, endpoints), the prediction runner, ``apibank_generate.generate`` and the inspect-ai
task. A stop string is looked for in the generated text only (never the prompt), after the answer's
leading whitespace and its opening turn label, so that ``AI: Sure, ...`` or ``\\nAI: ...`` begins an
answer rather than ending it.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

# Turn labels an answer may open with in the paper format's transcript ("AI: Sure, ...").
TURN_LABELS = ("User:", "AI:", "API:")

# Where a paper-format answer ends: the next turn of the transcript the model would go on writing.
PAPER_STOPS = ("\nUser:", "\nAI:", "\nAPI:", "\nGenerate API Request", "\nGenerate AI Response")
# A paper prompt sent as plain text is a transcript with one turn per line, and every gold answer of
# every level is one line: the answer ends at the end of its line. (A base model that goes on writes
# the instruction's sections again, "\n\nAPI descriptions:...", which no turn label stops.) In the
# transcript an executed call's result follows "->" on the call's line: that is the API's turn, which
# the model cannot know, and no gold answer contains "->" (the paper parser reads the call the same
# with or without the tail).
LINE_STOPS = ("\n", "->")


def answer_start(text: str) -> int:
    """Where an answer's content begins: after leading whitespace and an opening turn label (and the
    whitespace after it). Stop strings are looked for from here on."""
    start = len(text) - len(text.lstrip())
    for label in TURN_LABELS:
        if text.startswith(label, start):
            rest = text[start + len(label) :]
            return start + len(label) + len(rest) - len(rest.lstrip())
    return start


def first_stop(text: str, stops: Iterable[str]) -> int | None:
    """Where the answer ``text`` (generated text only, never the prompt) ends at a stop string, or None.

    A stop is looked for after the answer's leading whitespace and opening turn label
    (:func:`answer_start`). Every backend applies this same rule (transformers while decoding, vLLM
    and endpoints after the fact), so they agree.
    """
    start = answer_start(text)
    cut = None
    for stop in stops:
        if not stop:
            continue
        index = text.find(stop, start)
        if index >= 0 and (cut is None or index < cut):
            cut = index
    return cut


def cut_at_stop(text: str, stops: Iterable[str]) -> str:
    """``text`` up to its first stop string (searched in the generated text only, after leading whitespace)."""
    cut = first_stop(text, stops)
    return text if cut is None else text[:cut]


def answer_text(text: str | None, stops: Iterable[str]) -> str:
    """The prediction a completion gives: cut at its first stop string, surrounding whitespace removed."""
    return cut_at_stop(text or "", stops).strip()


def default_stops(fmt: str, plain_text: bool = False) -> tuple[str, ...]:
    """Chat formats end at the template's end-of-turn token (EOS); the paper format needs strings: the
    end of the line when the prompt is plain text, the next turn's label inside a chat template."""
    if fmt != "paper":
        return ()
    return LINE_STOPS if plain_text else PAPER_STOPS


def renders_plain_text(backend: Any, rows: Sequence[Mapping[str, Any]]) -> bool:
    """Whether ``backend`` sends the paper prompt as plain text (no chat template around it)."""
    from apibank.generate.conversation import build_conversation

    if not rows:
        return False
    conversation = build_conversation(rows[0], "paper")
    try:
        return backend.render(conversation) == conversation.plain_text
    except Exception:
        return False


def stops_for(backend: Any, rows: Sequence[Mapping[str, Any]], fmt: str) -> tuple[str, ...]:
    """The stop strings of ``fmt`` for the prompts ``backend`` renders from ``rows``."""
    return default_stops(fmt, plain_text=fmt == "paper" and renders_plain_text(backend, rows))
