"""Call-like markup: what says that an output holds a call, whether or not the run's reader read one.

A run counts the outputs from which its reader read no call although they hold call-like markup
(``unread_calls`` in results.json): a reader that does not know the model's format reads nothing, and
those rows score 0 with nothing else said. The markup is looked for after the reasoning is removed (a
draft call while thinking is no call), in the first ``MAX_TEXT_CHARS`` characters, and is, conservatively,
any of:

* a known family's own marker (:func:`~apibank.generate.toolcalls.registry.reader_for_text`);
* a call tag of a family the package may not read: ``<`` and, within 24 characters without a space or a
  bracket, ``tool_call``, ``tool_calls``, ``toolcall``, ``function_call(s)`` or ``invoke``
  (``<|tool_call_start|>``, ``<minimax:tool_call>``, ``<TOOLCALL>``, ``<｜DSML｜invoke``, ``<function_calls>``);
* a JSON object opening with a string ``"name"`` and then ``"arguments"`` or ``"parameters"`` (either order);
* a Python-style call of an offered tool: its name, ``(``, then ``)`` or ``keyword=``.

Prose that merely mentions a tool's name, or a JSON object with a ``"name"`` key alone, is not markup.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from apibank.generate.toolcalls.generic import MAX_TEXT_CHARS, schemas_of
from apibank.generate.toolcalls.reasoning import split_reasoning
from apibank.generate.toolcalls.registry import reader_for_text

_CALL_TAG = re.compile(r"<[^\s<>\[\]]{0,24}?(?:tool_?calls?|toolcalls?|function_?calls?|invoke)(?![a-z])", re.I)
_JSON_CALL = re.compile(
    r'\{\s*"name"\s*:\s*"[^"\n]{1,200}"\s*,\s*"(?:arguments|parameters)"\s*:'
    r'|\{\s*"(?:arguments|parameters)"\s*:\s*\{[^{}]{0,2000}\}\s*,\s*"name"\s*:\s*"')


def _python_call(names: Iterable[str]) -> re.Pattern[str] | None:
    names = sorted({name for name in names if name and re.fullmatch(r"[A-Za-z_][\w.]*", name)}, key=len, reverse=True)
    if not names:
        return None
    alternatives = "|".join(re.escape(name) for name in names)
    return re.compile(rf"(?<![\w.])(?:{alternatives})\s*\(\s*(?:\)|[A-Za-z_]\w*\s*=)")


def holds_call_markup(text: str, tools: Iterable[Any] | None = None) -> bool:
    """Whether an output (raw, reasoning still in it) holds call-like markup outside its reasoning; ``tools``:
    the OpenAI-shaped schemas offered, whose names make a Python-style call."""
    _, answer = split_reasoning((text or "")[:MAX_TEXT_CHARS])
    if not answer.strip():
        return False
    if reader_for_text(answer) is not None or _CALL_TAG.search(answer) or _JSON_CALL.search(answer):
        return True
    pattern = _python_call(schemas_of(tools))
    return bool(pattern and pattern.search(answer))
