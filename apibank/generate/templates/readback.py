"""Never a silent zero: the calls a chat template writes, read back with the run's reader before the run.

A run reads each output's calls with one reader (named, chosen from the template's markers, or per output
from its text). A reader that cannot read the markup the template itself writes for earlier calls reads
no call from the model either, and every API row scores 0 with nothing said. So before any weights load,
:func:`check_calls_read` makes the template write one call, then two parallel calls, as an earlier
assistant turn (:data:`~apibank.generate.templates.probes.PROBE_CALLS`, adapted as the rows are), takes
the text of that turn as the model would write it (after the generation prompt, up to its end-of-turn
marker) and reads it with the run's reader: the same calls must come back, names and arguments exact.

A template that shows no earlier calls (its calls are written as JSON text, the ``calls-as-text``
adaptation) gives nothing to compare: the run reads the family's documented format, and the record says
"not shown".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from apibank.generate.templates.adaptations import TemplateRefusal
from apibank.generate.templates.adapter import TemplateAdapter
from apibank.generate.templates.probes import (
    PROBE_CALLS,
    RESULT_MARKER,
    call_probe_conversation,
    call_probe_tools,
)

# (the text of an output, the prompt it answers) -> the (name, arguments) of each call the run reads in it
ReadFn = Callable[[str, str], Sequence[tuple[str, Any]]]
MARKUP_SHOWN = 80  # the most characters of a template's call markup that the one-line error shows
WAYS_OUT = "use --tool-parser NAME or --response-template FILE"


class CallsUnread(TemplateRefusal):
    """The run's reader does not read back the calls its chat template writes: every API row would score 0."""


@dataclass(frozen=True)
class WrittenCalls:
    what: str  # "one call", "two parallel calls"
    calls: tuple[tuple[str, dict[str, Any]], ...]
    prompt: str  # the generation prompt the call turn answers
    outputs: tuple[str, ...]  # that turn's text as the model would write it, most likely cut first; () not shown


def _turn_start(prompt: str, full: str) -> int:
    """Where the call turn begins in ``full``: after the generation prompt, or where the two differ (a
    generation prompt opening a thinking block the call turn does not have), backed off to a boundary."""
    if full.startswith(prompt):
        return len(prompt)
    common = 0
    for mine, theirs in zip(prompt, full):
        if mine != theirs:
            break
        common += 1
    boundary = max(full.rfind(char, 0, common) for char in ("\n", " ", ">", "]"))
    return boundary + 1 if boundary >= 0 else common


def _turn_texts(prompt: str, full: str, end_markers: Sequence[str]) -> tuple[str, ...]:
    turn = full[_turn_start(prompt, full):]
    at = turn.find(RESULT_MARKER)
    turn = turn[:at] if at >= 0 else turn
    ends = [turn.find(marker) for marker in end_markers if marker and marker in turn]
    texts = [turn[:min(ends)].strip()] if ends else []
    texts.append(turn.strip())
    return tuple(dict.fromkeys(text for text in texts if text))


def written_calls(adapter: TemplateAdapter, end_markers: Sequence[str] = ()) -> list[WrittenCalls]:
    """What the template writes for each of :data:`PROBE_CALLS` as an earlier assistant turn; ``end_markers``
    (the end-of-turn tokens: an output ends before them) cut the turn where the model would stop."""
    tools = call_probe_tools()
    found = []
    for what, calls in PROBE_CALLS.items():
        before, after = call_probe_conversation(calls)
        prompt, _ = adapter.render_unrecorded(before, tools, fmt="tools")
        full, names = adapter.render_unrecorded(after, tools, fmt="tools")
        outputs = () if "calls-as-text" in names else _turn_texts(prompt, full, end_markers)
        found.append(WrittenCalls(what, calls, prompt, outputs))
    return found


_CHOSEN = {"flag": "--tool-parser", "template": "from the template", "text": "from each output's text"}


def reader_label(choice: dict[str, Any]) -> str:
    """How a run's reader is named in the error: ``{"name", "chosen_by"}`` (a ParserChoice's record) in words."""
    how = _CHOSEN.get(str(choice.get("chosen_by")), f"chosen by {choice.get('chosen_by')}")
    return f"{choice.get('name') or 'auto'}, {how}"


def _shown(text: str) -> str:
    """The markup on one line, cut to :data:`MARKUP_SHOWN` characters."""
    flat = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return flat if len(flat) <= MARKUP_SHOWN else flat[:MARKUP_SHOWN] + "..."


def check_calls_read(adapter: TemplateAdapter, read: ReadFn, *, reader: str,
                     end_markers: Sequence[str] = ()) -> dict[str, Any]:
    """Read back what the template writes for :data:`PROBE_CALLS` with ``read`` (the run's reader, named
    ``reader`` in the error). Returns the record for results.json: ``{"result": "read" | "not shown" |
    "not checked", "probes": {what: ...}}`` (not checked: the template renders no call turn at all, which
    the rows' own rendering then reports). Raises :class:`CallsUnread`, one line showing the markup and
    the ways out, when any comes back other than written."""
    try:
        written = written_calls(adapter, end_markers)
    except TemplateRefusal as error:  # a template that cannot render a call turn at all: the rows say so
        return {"result": "not checked", "why": str(error).splitlines()[0][:300], "probes": {}}
    probes: dict[str, str] = {}
    for found in written:
        if not found.outputs:
            probes[found.what] = "not shown (the template writes earlier calls as JSON text)"
            continue
        expected = [(name, arguments) for name, arguments in found.calls]
        readings = [[(name, arguments) for name, arguments in read(text, found.prompt)] for text in found.outputs]
        if expected not in readings:
            got = readings[0]
            what_came = "no call" if not got else f"{len(got)} other call{'s' if len(got) != 1 else ''}"
            raise CallsUnread(f"the chat template writes {found.what} as '{_shown(found.outputs[0])}'; the run's reader "
                              f"({reader}) reads {what_came} there, so every API row would score 0: {WAYS_OUT}")
        probes[found.what] = "read"
    shown = any(value == "read" for value in probes.values())
    return {"result": "read" if shown else "not shown", "probes": probes}
