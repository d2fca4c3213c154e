"""The stop rule: where a generated answer ends, which stop strings a prompt format uses, and which
turn markers of a chat template end an agent's step.

Backends stop early where they can (transformers and vLLM by this module's rule on the streamed tokens,
servers through their own ``stop`` parameter, which a server may ignore), but none cuts its text: the cut
is made once, on whatever text came back, by the prediction runner (``runner.finish``, which
``apibank_generate.generate`` goes through too), the agent's model steps and the inspect-ai task, so a
backend cannot change where an answer ends. A stop string is looked for in the generated text only (never
the prompt), after the answer's leading whitespace and its opening turn label, so that ``AI: Sure, ...``
or ``\nAI: ...`` begins an answer rather than ending it. (How many tokens an answer may take:
:func:`apibank.generate.runner.sized_settings` and the budgets of :mod:`apibank.benchmark`.)
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

from apibank.generate.conversation import Conversation, build_conversation, chat_conversation

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
# Where an agent's step ends in its plain transcript (tools as JSON schemas, calls as JSON in text):
# the transcript's next turn.
TRANSCRIPT_STOPS = ("\nUser:", "\nTool result:", "\nSystem:")
# A base model behind a chat template writes on past its turn: an agent's step ends at the template's
# turn markers (those its rendered prompt contains), as at EOS.
TURN_END_MARKERS = ("<end_of_turn>", "<start_of_turn>", "<|im_end|>", "<|eot_id|>", "<|end|>")


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
    (:func:`answer_start`). The transformers decoder stops by this same rule (:class:`StopWatch`), and every
    backend's text is cut by it afterwards, so they agree.
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


class StopWatch:
    """The stop rule asked after every new token of one answer, reading the new text only.

    ``decode(ids)`` turns the answer's token ids into text. While the answer's start
    (:func:`answer_start`) may still move (leading whitespace, a turn label being written), the whole
    answer is decoded, a few tokens; once it cannot, only the last ``window`` tokens are, which hold any
    stop string the newest token completes. The answer is cut by :func:`first_stop` afterwards all the
    same; asking this after each token gives the same first stop as :func:`first_stop` on the whole text.
    """

    def __init__(self, stops: Iterable[str], decode: Callable[[Sequence[int]], str]) -> None:
        self.stops = tuple(stop for stop in stops if stop)
        self.decode = decode
        # a stop string spans at most one token per character, plus partial tokens at its edges and
        # special tokens that decode to nothing
        self.window = max((len(stop) for stop in self.stops), default=0) + 16
        self._tail_only = False

    def __call__(self, ids: Sequence[int]) -> bool:
        if not self.stops:
            return False
        if self._tail_only:
            tail = self.decode(ids[-self.window :])
            return any(stop in tail for stop in self.stops)
        text = self.decode(ids)
        if first_stop(text, self.stops) is not None:
            return True
        if len(ids) > 2 * self.window and _start_is_settled(text):
            # from here on the window starts after the answer's start
            self._tail_only = len(self.decode(ids[: -self.window])) >= answer_start(text)
        return False


def _start_is_settled(text: str) -> bool:
    """Whether more text can no longer move :func:`answer_start`: content has begun after the leading
    whitespace, is longer than any turn label, and (after a label) is not whitespace only."""
    content = text.lstrip()
    return len(content) > max(len(label) for label in TURN_LABELS) and answer_start(text) < len(text)


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


def tools_probe() -> Conversation:
    """A one-tool chat conversation: what a backend must render to take an agent's steps natively (its
    chat template refuses it, or has no tool calling), and whose prompt shows the template's turn markers."""
    tools = [{"type": "function", "function": {"name": "Probe", "description": "probe",
                                               "parameters": {"type": "object", "properties": {}}}}]
    return chat_conversation([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}], tools,
                             conversation_id="probe")


def turn_end_markers(backend: Any) -> tuple[str, ...]:
    """The :data:`TURN_END_MARKERS` that ``backend``'s chat template writes (in the prompt of
    :func:`tools_probe`) and its tokenizer knows; none for a backend without a tokenizer (an endpoint
    ends its turns itself)."""
    tokenizer = getattr(backend, "tokenizer", None)
    if tokenizer is None:
        return ()
    prompt = backend.render(tools_probe())
    vocabulary = tokenizer.get_vocab()
    return tuple(marker for marker in TURN_END_MARKERS if marker in vocabulary and marker in prompt)
