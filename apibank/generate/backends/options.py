"""What a backend can be told, declared once by the backend itself.

Each backend class lists its constructor's options as ``Option`` objects (``options``); the
command line builds one flag per option from those lists (an option that several backends share, such
as ``dtype``, is one flag) and checks the values before any model loads. A new backend's options need
no change anywhere else: its module and its registry line are the whole of it.

Values given on the command line are parsed by ``Option.parse`` and checked by ``Option.problem``; a
value that several options together decide (``--backend openai`` needs ``--base-url``) is checked by
the backend's ``check_options`` classmethod, also before any model loads.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from apibank.errors import UsageError


@dataclass(frozen=True)
class Option:
    """One constructor keyword of a backend, and the flag that sets it.

    ``kind`` says how the flag reads its value: ``"value"`` (one value parsed by ``type``), ``"switch"``
    (present or not) or ``"pairs"`` (repeated ``KEY=VALUE``, collected into a dict whose values are read
    as JSON where they parse, as text otherwise)."""

    name: str
    help: str
    type: Callable[[str], Any] = str
    default: Any = None
    kind: str = "value"
    flag: str | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    minimum: float | None = None
    check: Callable[[Any], str | None] | None = None  # what is wrong with a value, or None

    def __post_init__(self) -> None:
        if self.kind not in ("value", "switch", "pairs"):
            raise ValueError(f"option {self.name!r}: unknown kind {self.kind!r}")

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def dest(self) -> str:
        """The attribute of the parsed arguments that holds the flag's value (None: not given)."""
        return self.cli_flag.lstrip("-").replace("-", "_")

    def problem(self, value: Any) -> str | None:
        """What is wrong with a given value, as the end of a sentence starting with the flag and value."""
        if self.minimum is not None and value < self.minimum:
            return f"must be at least {self.minimum:g}"
        if self.check is not None:
            return self.check(value)
        return None

    def shown(self, value: Any) -> str:
        if self.kind == "pairs":
            return " ".join(f"{key}={json.dumps(item)}" for key, item in value.items())
        return str(value)


def parse_pair(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` as ``(key, value)``: the value read as JSON (``0.5``, ``true``, ``{"a": 1}``) where it
    parses, else kept as text (``bfloat16``). Raises ValueError for text without ``=``."""
    key, equals, value = text.partition("=")
    key = key.strip().replace("-", "_")
    if not equals or not key.isidentifier():
        raise ValueError(f"{text!r}: give KEY=VALUE, e.g. max_model_len=4096")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def json_object(text: str) -> dict[str, Any]:
    """A JSON object given on the command line (``{"enable_thinking": false}``); ValueError otherwise."""
    try:
        value = json.loads(text)
    except ValueError as error:
        raise ValueError(f"{text!r} is not JSON ({error}); give an object, "
                         "e.g. '{\"enable_thinking\": false}'") from None
    if not isinstance(value, dict):
        raise ValueError(f"{text!r} is JSON but not an object; give an object, e.g. '{{\"enable_thinking\": false}}'")
    return value


def positive_seconds(value: float) -> str | None:
    return None if value > 0 and math.isfinite(value) else "give a positive number of seconds"


# Options that more than one backend takes: one declaration, so that their flag is one flag.
REVISION = Option("revision", "model revision (branch, tag or commit)", metavar="REV")
DTYPE = Option("dtype", "auto, float32, bfloat16, float16", default="auto")
TRUST_REMOTE_CODE = Option("trust_remote_code", "run the model repository's own code", kind="switch",
                           default=False)
CHAT_TEMPLATE = Option(
    "chat_template",
    "FILE: a Jinja chat template replacing the model's (for a model with none or a broken one; then used "
    "by every format). auto/on/off: whether the paper format goes through the model's own template "
    "(auto: if it has one)",
    default="auto", metavar="auto|on|off|FILE",
)

CHAT_TEMPLATE_KWARGS = Option(
    "chat_template_kwargs",
    "JSON object of options for the chat template, e.g. '{\"enable_thinking\": false}' (passed to "
    "apply_chat_template; to an endpoint as chat_template_kwargs in each request)",
    type=json_object, metavar="JSON",
)



def _tool_parser_problem(name: str) -> str | None:
    from apibank.generate.toolcalls import UnknownName, get_reader

    try:
        get_reader(name)
    except UnknownName as error:
        return str(error).replace("unknown tool parser " + repr(name), "no such tool parser", 1)
    return None


TOOL_PARSER = Option(
    "tool_parser",
    "the reader of the model's native tool calls, by family (names as vLLM's --tool-call-parser: hermes, "
    "llama3_json, mistral, openai, deepseek_v31, gemma4, ...); default: chosen from the chat template's "
    "markers, else from each output's own",
    check=_tool_parser_problem, metavar="NAME",
)


def _response_template_problem(path: str) -> str | None:
    from apibank.generate.toolcalls.engine import as_template

    try:
        as_template(path)
    except ValueError as error:
        return str(error).removeprefix(f"response template {path}: ") + "; give a transformers response template (JSON)"
    return None


RESPONSE_TEMPLATE = Option(
    "response_template",
    "a transformers response template (JSON: the model's own from another copy, or a spec file of "
    "apibank/generate/toolcalls/specs) that reads the model's calls, before the model's own template and "
    "the readers chosen from the chat template; recorded in results.json with the tool parser",
    check=_response_template_problem, metavar="FILE",
)


def declared_options(backend_classes: Iterable[tuple[str, type]]) -> dict[str, tuple[Option, list[str]]]:
    """``{flag: (option, [backend names])}`` over the given backends, one entry per flag. Two backends
    that declare the same flag must declare the same option (share the declaration above)."""
    flags: dict[str, tuple[Option, list[str]]] = {}
    for name, backend_class in backend_classes:
        for option in getattr(backend_class, "options", ()):
            known = flags.get(option.cli_flag)
            if known is None:
                flags[option.cli_flag] = (option, [name])
            elif known[0] != option:
                raise ValueError(f"backends {known[1][0]!r} and {name!r} declare {option.cli_flag} differently: "
                                 "share one Option declaration")
            else:
                known[1].append(name)
    return flags


def given_values(flags: Mapping[str, tuple[Option, list[str]]], values: Mapping[str, Any]) -> dict[str, Any]:
    """The flags given (``values`` maps each option's ``dest`` to its value, None when not given), each
    checked; raises ``UsageError`` for the first bad one."""
    given = {}
    for flag, (option, _) in flags.items():
        value = values.get(option.dest)
        if value is None:
            continue
        problem = option.problem(value)
        if problem:
            raise UsageError(f"{flag} {option.shown(value)}: {problem}")
        given[flag] = value
    return given


def options_for(backend: str, backend_class: type, flags: Mapping[str, tuple[Option, list[str]]],
                given: Mapping[str, Any]) -> dict[str, Any]:
    """The constructor keywords of ``backend_class`` from the given flags (defaults for the rest).
    A given flag that this backend does not take is refused: silently ignoring it would run something
    other than what was asked for."""
    own = {option.cli_flag for option in getattr(backend_class, "options", ())}
    for flag in given:
        if flag not in own:
            owners = ", ".join(flags[flag][1])
            raise UsageError(f"{flag} applies to --backend {owners}; --backend {backend} does not take it: "
                             f"drop {flag}")
    return {option.name: given.get(option.cli_flag, option.default) for option in backend_class.options}
