"""Response templates run by transformers' own engine (``transformers.utils.chat_parsing``), within our bounds.

A response template is transformers' declarative reading of a model's output (``{"version": 1,
"start_anchor": ..., "fields": {...}}``: regions opened and closed by markers, each read by a content
parser: ``json``, ``xml-inline``, ``kv-lines``, ``python-call-list``, values typed by the tools' JSON
schemas). The same spec is what a model ships in its ``tokenizer_config.json`` and what vLLM runs.

Model output is untrusted, and the engine knows no bounds of its own, so every reading here keeps the
package's (measured in the CHANGELOG and ``benchmarks/bench_toolcall_readers.py``): the engine sees the
first :data:`~apibank.generate.toolcalls.generic.MAX_TEXT_CHARS` characters, fed as a stream of
:data:`FEED_CHARS` pieces, and no more than the piece in which the
:data:`~apibank.generate.toolcalls.generic.MAX_CALLS`-th call region closes; a call whose arguments nest
deeper than :data:`~apibank.generate.toolcalls.generic.MAX_DEPTH` or write out longer than
:data:`~apibank.notation.MAX_CALL_CHARS` is no call; any error of the engine (a region that is no JSON,
JSON nested past Python's recursion limit, a transform that does not apply) reads as no call.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Iterable, Mapping

from apibank.generate.toolcalls.generic import MAX_CALLS, MAX_TEXT_CHARS, ToolCall, as_call, too_deep
from apibank.notation import MAX_CALL_CHARS

Schemas = Mapping[str, Mapping[str, Any]]  # tool name -> its JSON-schema ``parameters``
# The engine is fed the text in pieces of this size, as a stream: it matches delimiters in the `regex` module's
# partial mode, which on a whole 64 KB text takes seconds for some patterns (measured in the CHANGELOG), and
# per piece only what is still pending is searched again.
FEED_CHARS = 256
PREFIX_CHARS = 4096  # of a prompt given as the prefix: its end, where the assistant turn's header is


def compile_template(template: Any, source: str = "response_template") -> Any:
    """transformers' compiled form of a response template (a dict), checked by transformers' own loader;
    ValueError (one line) naming ``source`` and what is wrong otherwise."""
    from transformers.utils.chat_parsing.response_templates import load_response_template

    try:
        return load_response_template(template)
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        reason = " ".join(str(error).split())
        raise ValueError(f"{source}: not a transformers response template ({reason})") from None


@functools.lru_cache(maxsize=16)
def _compiled_text(text: str) -> Any:
    return compile_template(json.loads(text))


def compiled(template: Mapping[str, Any]) -> Any:
    """:func:`compile_template` of a template already checked, compiled once per distinct template."""
    return _compiled_text(json.dumps(template, sort_keys=True))


def as_template(value: Mapping[str, Any] | str | Path, source: str = "response_template") -> dict[str, Any]:
    """A response template given as a dict or as the path of a JSON file, bare or a spec file of this package
    (its ``response_template``), checked by transformers' loader; ValueError with one line otherwise."""
    if isinstance(value, (str, Path)):
        source = f"response template {value}"
        try:
            value = json.loads(Path(value).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as error:
            raise ValueError(f"{source}: cannot read it ({error.__class__.__name__}: {error})") from None
        except ValueError as error:
            raise ValueError(f"{source}: not JSON ({error})") from None
    if not isinstance(value, Mapping):
        raise ValueError(f"{source}: a JSON object or the path of a JSON file, not {type(value).__name__}")
    data = dict(value)
    if isinstance(data.get("response_template"), Mapping):
        data = dict(data["response_template"])
    compile_template(data, source)
    return data


def _tools(schemas: Schemas | None) -> list[dict[str, Any]] | None:
    if not schemas:
        return None
    return [{"type": "function", "function": {"name": name, "parameters": dict(parameters or {})}}
            for name, parameters in schemas.items()]


def _entries(value: Any) -> Iterable[Any]:
    """The call entries of one output field: a call, or a list of calls (nested once by ``repeats``)."""
    for item in value if isinstance(value, list) else [value]:
        yield from (item if isinstance(item, list) else [item])


def _bounded(call: ToolCall) -> bool:
    _, arguments = call
    if isinstance(arguments, str):  # UnreadableArguments: kept as the call it is
        return True
    try:
        written = json.dumps(arguments, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        return False
    return len(written) <= MAX_CALL_CHARS and not too_deep(written)


def message_of(text: str, template: Any, schemas: Schemas | None = None,
               call_fields: tuple[str, ...] = ("tool_calls",), prefix: str = "") -> dict[str, Any] | None:
    """The message transformers' engine reads from ``text`` (the first MAX_TEXT_CHARS characters) with a
    compiled response template, the values typed by ``schemas``, after the prompt ``prefix`` (where a template
    writes part of the answer into it, such as an opening ``<think>``); None where the engine refuses the text.
    The text is read no further than the piece in which the MAX_CALLS-th region of ``call_fields`` closes
    (each region costs the engine a fixed time: 11,000 tiny ones took it 2 s)."""
    from transformers.utils.chat_parsing import ResponseParser

    text = (text or "")[:MAX_TEXT_CHARS]
    try:
        parser = ResponseParser(template, prefix=(prefix or "")[-PREFIX_CHARS:], tools=_tools(schemas))
        regions = 0
        for start in range(0, len(text), FEED_CHARS):
            events = parser.feed(text[start:start + FEED_CHARS])
            regions += sum(event["type"] == "region_close" and event["field"] in call_fields for event in events)
            if regions >= MAX_CALLS:
                break
        message, _ = parser.finalize()
    except Exception:  # whatever the engine raises on untrusted text is no message, never the run's end
        return None
    return message if isinstance(message, dict) else None


def template_calls(text: str, template: Any, schemas: Schemas | None = None,
                   call_fields: tuple[str, ...] = ("tool_calls",), *, strict: bool = True, prefix: str = ""
                   ) -> list[ToolCall]:
    """The calls a response template reads from ``text``, as ``(name, arguments)``.

    ``call_fields``: the fields of the message holding calls (each a call or a list of calls, in the
    OpenAI shape or ``{"name", "arguments"}``). ``strict`` (the package's own spec files): a call whose
    arguments are not an object, such as a region the engine kept as text because it was no JSON, is no
    call; otherwise (a model's or a user's template) arguments written as text are JSON text to decode,
    kept as :class:`~apibank.notation.UnreadableArguments` where they are none."""
    message = message_of(text, template, schemas, call_fields, prefix)
    if message is None:
        return []
    calls: list[ToolCall] = []
    for field in call_fields:
        for entry in _entries(message.get(field)):
            function = entry.get("function", entry) if isinstance(entry, Mapping) else None
            if strict and not (isinstance(function, Mapping) and isinstance(
                    function.get("arguments", function.get("parameters", {})), Mapping)):
                continue
            call = as_call(entry)
            if call is not None and _bounded(call):
                calls.append(call)
    return calls[:MAX_CALLS]
