"""Call readers by family: one table, filled once, chosen from the chat template's own markers, or from the
text's, or by name (``--tool-parser``).

Most families are data: one spec file per family in ``specs/`` (``specs/README.md`` gives the format), a
transformers response template run by transformers' own engine (:mod:`~apibank.generate.toolcalls.engine`).
A family the engine cannot read is one small Python module holding ``READERS`` (:data:`MODULES`), its
reason at its top. Names are vLLM's ``--tool-call-parser`` names where vLLM reads the family; aliases are
other vLLM names read the same way; hyphens and underscores are alike in every name.

Order matters where markers overlap (GLM-4.5 and Qwen3-Coder write ``<tool_call>`` too, around their own
syntax): each family has a ``priority``, the higher ones tried first (ties in name order), and the first
whose markers match is the one chosen.
"""

from __future__ import annotations

import importlib
import json
import re
from dataclasses import dataclass, field
from functools import partial
from importlib import resources
from typing import Any, Callable, Mapping

from apibank.generate.backends.registry import Registry, UnknownName, unknown_message
from apibank.generate.toolcalls.engine import compile_template, template_calls
from apibank.generate.toolcalls.generic import ToolCall, declared_types

Schemas = Mapping[str, Mapping[str, Any]]  # tool name -> its JSON-schema ``parameters``

SPEC_KEYS = {"name": str, "aliases": list, "summary": str, "template_markers": list, "text_markers": list,
             "response_template": dict}
OPTIONAL_SPEC_KEYS = {"priority": int, "call_fields": list, "notes": str}


@dataclass(frozen=True)
class Reader:
    """One family's call syntax.

    ``template_markers``: groups of strings that all appear in the family's chat template (how the family is
    recognised from a template; several groups: any one of them). ``text_markers``: patterns, any of which found in a model's output
    recognises the family without a template (empty: the family has no marker of its own and is read
    only when chosen). ``read(text, schemas)`` returns the calls in ``text`` (reasoning already removed);
    ``schemas`` (tool name -> parameters), when known, types the values of families that write values
    as bare text (XML-style parameters). ``response_template``: the spec the family is read with (None: a
    Python reader)."""

    name: str
    read: Callable[[str, "Schemas | None"], list[ToolCall]]
    template_markers: tuple[tuple[str, ...], ...]
    text_markers: tuple[re.Pattern[str], ...] = ()
    summary: str = ""  # the call syntax, in one line
    priority: int = 0
    aliases: tuple[str, ...] = ()
    response_template: Mapping[str, Any] | None = field(default=None, compare=False)

    def recognises(self, text: str) -> bool:
        return any(marker.search(text) for marker in self.text_markers)

    def fits_template(self, template: str) -> bool:
        return any(all(marker in template for marker in group) for group in self.template_markers)


# The families read in Python (each module says why at its top).
MODULES = ("pythonic", "llama3_json", "xlam", "phi4_mini_json", "functions_prefix", "json_anywhere", "olmo3", "apertus")


def _strings(values: Any) -> bool:
    return isinstance(values, list) and all(isinstance(value, str) and value for value in values)


def _checked(spec: Any, source: str) -> dict[str, Any]:
    if not isinstance(spec, dict):
        raise ValueError(f"{source}: a spec is a JSON object, not {type(spec).__name__}")
    missing, unknown = sorted(set(SPEC_KEYS) - set(spec)), sorted(set(spec) - set(SPEC_KEYS) - set(OPTIONAL_SPEC_KEYS))
    if missing or unknown:
        raise ValueError(f"{source}: keys missing {missing}, unknown {unknown} (see specs/README.md)")
    for key, kind in {**SPEC_KEYS, **OPTIONAL_SPEC_KEYS}.items():
        if key in spec and (not isinstance(spec[key], kind) or (kind is int and isinstance(spec[key], bool))):
            raise ValueError(f"{source}: {key!r} must be a {kind.__name__}")
    if not spec["name"] or not _strings(spec["aliases"]) or not _strings(spec.get("call_fields", [])):
        raise ValueError(f"{source}: the name, each alias and each call field must be non-empty strings")
    if not all(group and _strings(group) for group in spec["template_markers"]):
        raise ValueError(f"{source}: 'template_markers' is a list of non-empty lists of strings")
    return spec


def reader_of_spec(spec: Any, source: str = "spec") -> Reader:
    """The reader a spec file describes (see specs/README.md); ValueError naming ``source`` if it is wrong."""
    spec = _checked(spec, source)
    try:
        text_markers = tuple(re.compile(pattern) for pattern in spec["text_markers"])
    except (re.error, TypeError) as error:
        raise ValueError(f"{source}: a text marker is no regular expression ({error})") from None
    compiled = compile_template(spec["response_template"], source)
    call_fields = tuple(spec.get("call_fields", ("tool_calls",)))
    # Values are typed by the tools' schemas where the format writes them as bare text (xml-inline, ...);
    # JSON keeps the types the model wrote, "2" included, as vLLM's readers of these formats do.
    typed = any(field.content not in ("json", "python-call-list")
                for name, field in compiled.fields.items() if name in call_fields)
    return Reader(spec["name"], partial(_read_spec, template=compiled, call_fields=call_fields, typed=typed),
                  tuple(tuple(group) for group in spec["template_markers"]), text_markers, spec["summary"],
                  spec.get("priority", 0), tuple(spec["aliases"]), spec["response_template"])


def _read_spec(text: str, schemas: Schemas | None = None, *, template: Any, call_fields: tuple[str, ...],
               typed: bool) -> list[ToolCall]:
    calls = template_calls(text, template, schemas if typed else None, call_fields)
    return [_as_text_unless_typed(call, schemas) for call in calls] if typed else calls


def _as_text_unless_typed(call: ToolCall, schemas: Schemas | None) -> ToolCall:
    """A bare-text value stays the text written unless the tool's schema types it: transformers before 5.20
    decodes every bare value that reads as JSON (``1`` for "1"), 5.20 on keeps it text, and vLLM 0.32 pins
    transformers < 5.20, so without this the reading would hang on the installed version."""
    name, arguments = call
    if not isinstance(arguments, dict):
        return call
    return name, {key: value if isinstance(value, str) or declared_types(schemas, name, key) - {"string"}
                  else json.dumps(value, ensure_ascii=False) for key, value in arguments.items()}


def spec_readers() -> list[Reader]:
    """A reader per file of ``specs/`` (file name order)."""
    folder = resources.files("apibank.generate.toolcalls") / "specs"
    readers = []
    for entry in sorted(folder.iterdir(), key=lambda item: item.name):
        if entry.name.endswith(".json"):
            source = f"apibank/generate/toolcalls/specs/{entry.name}"
            try:
                spec = json.loads(entry.read_text(encoding="utf-8"))
            except ValueError as error:
                raise ValueError(f"{source}: not JSON ({error})") from None
            readers.append(reader_of_spec(spec, source))
    return readers


def _key(name: str) -> str:
    return name.strip().lower().replace("-", "_")


class Readers(Registry[Reader]):
    """The families by name, in the order they are tried (priority, then name); a family's aliases and
    spellings with hyphens for underscores find it too."""

    def __init__(self, readers: list[Reader]) -> None:
        super().__init__("tool parser")
        self._lookup: dict[str, Reader] = {}
        for reader in sorted(readers, key=lambda reader: (-reader.priority, reader.name)):
            self.register(reader.name, reader)
            for name in (reader.name, *reader.aliases):
                if _key(name) in self._lookup:
                    raise ValueError(f"tool parser {name!r} is registered twice "
                                     f"({self._lookup[_key(name)].name} and {reader.name})")
                self._lookup[_key(name)] = reader

    def readers(self) -> list[Reader]:
        """The families in the order they are tried."""
        return [self.get(name) for name in self.names()]

    def all_names(self) -> tuple[str, ...]:
        """Every family's name and its aliases."""
        return tuple(name for family in self.names() for name in (family, *self.get(family).aliases))

    def get(self, name: str, *, scripted: bool | None = None) -> Reader:
        reader = self._lookup.get(_key(name)) if isinstance(name, str) else None
        if reader is None:
            raise UnknownName(unknown_message(self.kind, name, self.all_names()))
        return reader


def _load() -> Readers:
    readers = spec_readers()
    for module in MODULES:
        readers += importlib.import_module(f"apibank.generate.toolcalls.{module}").READERS
    return Readers(readers)


def reader_names() -> tuple[str, ...]:
    """Every name ``--tool-parser`` takes: each family's, then its aliases (hyphens and underscores alike)."""
    return READERS.all_names()


def get_reader(name: str) -> Reader:
    """The reader registered as ``name`` or one of its aliases; :class:`UnknownName` (naming the closest
    ones) otherwise."""
    return READERS.get(name)


def reader_for_template(template: str | None) -> Reader | None:
    """The family whose markers the chat template holds (None: none does, or no template)."""
    if not isinstance(template, str) or not template:
        return None
    return next((reader for reader in READERS.readers() if reader.fits_template(template)), None)


def reader_for_text(text: str) -> Reader | None:
    """The family whose own markers the text holds (None: it holds none)."""
    return next((reader for reader in READERS.readers() if reader.recognises(text)), None)


# Last: the Python readers import this module's names as they load.
READERS: Readers = _load()

__all__ = ["MODULES", "READERS", "Reader", "Readers", "Schemas", "UnknownName", "get_reader", "reader_for_template",
           "reader_for_text", "reader_names", "reader_of_spec", "spec_readers"]
