"""Conversations that any chat template accepts: probe what a template refuses, adapt, say so, and
check every row's prompt for what it lost.

Chat templates differ in what they take: many refuse a ``system`` role, raise on two consecutive
turns of one role ("roles must alternate"), have no ``tool`` role, drop or refuse assistant
``tool_calls``, ignore ``tools=``, want call ids of one form (Mistral: nine letters and digits) or
arguments as JSON text (they print a dict as Python). Some refuse loudly (the template raises),
others silently (the text never reaches the prompt). :class:`TemplateAdapter` finds out once per
template by rendering small probe conversations shaped like the real ones (a tool result after an
assistant tool call; a system turn with a user, an assistant or a tool turn last; ``tools=`` given in
the ``tools`` format) with marker strings, then rewrites every conversation the same way before
rendering it.

Every row's prompt is then checked for completeness (:func:`missing_pieces`): the system text, every
turn, every call's name and argument values, every result and every tool's name must be in it. A
conversation the probes did not foresee (it raises, or loses a piece) is tried again with each further
adaptation; if none gives a complete prompt, :class:`TemplateRefusal` names the row and what the
template refused or dropped. Silent loss is not possible.

:meth:`TemplateAdapter.thinking` says whether the template makes the model think before it answers
(a reasoning budget is then added to each answer's, :mod:`apibank.generate.runner`).

The package holds one concept a module: :mod:`~apibank.generate.templates.adaptations` (the rewrites),
:mod:`~apibank.generate.templates.completeness` (what a prompt must show),
:mod:`~apibank.generate.templates.probes` (the probe conversations),
:mod:`~apibank.generate.templates.adapter` (:class:`TemplateAdapter`) and
:mod:`~apibank.generate.templates.readback` (the calls a template writes, read back with the run's reader).
"""

from apibank.generate.templates.adaptations import (
    ADAPTATIONS,
    CALL_INSTRUCTION,
    ESCALATION,
    ORDER,
    Adaptation,
    Message,
    RenderFn,
    TemplateRefusal,
    Tools,
    adapt,
    alphanumeric_id,
    call_as_text,
    candidate_sets,
    shape_of,
    tool_result_text,
)
from apibank.generate.templates.adapter import TemplateAdapter
from apibank.generate.templates.completeness import conversation_pieces, missing_pieces
from apibank.generate.templates.readback import CallsUnread, check_calls_read

__all__ = [
    "ADAPTATIONS", "CALL_INSTRUCTION", "ESCALATION", "CallsUnread", "check_calls_read", "ORDER", "Adaptation", "Message", "RenderFn", "TemplateAdapter",
    "TemplateRefusal", "Tools", "adapt", "alphanumeric_id", "call_as_text", "candidate_sets", "conversation_pieces",
    "missing_pieces", "shape_of", "tool_result_text",
]
