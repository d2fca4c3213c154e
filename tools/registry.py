"""The tool registries: the single source for dispatch, prompt descriptions and JSON schemas.

There are two tool sets, as upstream has two tool folders: ``level-1-2`` (``apis/``, 53 tools) and
``level-3`` (``lv3_apis/``, 22 tools). A tool module registers its class with ``@LEVEL_1_2.register``
or ``@LEVEL_3.register``; the set imports every module of its package on first use and is read-only
afterwards.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import json
import pkgutil
import threading
from typing import Any, Iterator

from .base import CallRejected, Tool

_SCHEMA_TYPES = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "list": {"type": "array"},
    "list(str)": {"type": "array", "items": {"type": "string"}},
}


# Types upstream descriptions use beyond the registry's own (tools outside the registry: the
# training set's synthetic APIs); anything else is described as a string.
_DESCRIBED_TYPES = {"dict": {"type": "object"}, "datetime": {"type": "string"}, "date": {"type": "string"}}


def parameter_schema(upstream_type: Any, description: Any) -> dict[str, Any]:
    """The JSON schema of one described parameter: its type mapped, its description kept."""
    schema = dict(_SCHEMA_TYPES.get(str(upstream_type)) or _DESCRIBED_TYPES.get(str(upstream_type), {"type": "string"}))
    schema["description"] = description if isinstance(description, str) else ""
    return schema


def descriptor_line(descriptor: dict[str, Any]) -> str:
    """One description line as upstream prompts show it (default separators, ASCII escaping)."""
    return json.dumps(descriptor, ensure_ascii=True)


class ToolSet:
    def __init__(self, name: str, package: str) -> None:
        self.name = name
        self._package = package
        self._tools: dict[str, type[Tool]] = {}
        self._loaded = False
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ registration
    def register(self, cls: type[Tool]) -> type[Tool]:
        if self._loaded:
            raise RuntimeError(f"tool set {self.name} is read-only; cannot register {cls.__name__}")
        name = cls.name
        if name in self._tools:
            raise ValueError(f"duplicate tool name {name!r} in tool set {self.name}")
        _validate(cls)
        if not cls.module_name:
            cls.module_name = cls.__module__.rsplit(".", 1)[-1]
        self._tools[name] = cls
        return cls

    def _load(self) -> None:
        if self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            package = importlib.import_module(self._package)
            for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
                importlib.import_module(f"{self._package}.{info.name}")
            ordered = sorted(self._tools.values(), key=lambda c: (c.module_name, c.name))
            self._tools = {cls.name: cls for cls in ordered}
            self._loaded = True

    # ------------------------------------------------------------------ lookup
    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._tools

    def __iter__(self) -> Iterator[str]:
        self._load()
        return iter(list(self._tools))

    def __len__(self) -> int:
        self._load()
        return len(self._tools)

    def names(self) -> list[str]:
        self._load()
        return list(self._tools)

    def get(self, name: str) -> type[Tool]:
        self._load()
        try:
            return self._tools[name]
        except (KeyError, TypeError):
            hint = self.suggest(name) if isinstance(name, str) else []
            extra = f" (did you mean {', '.join(hint)}?)" if hint else ""
            raise CallRejected("unknown_tool", "invalid tool name.", None) from KeyError(
                f"unknown tool {name!r} in {self.name}{extra}"
            )

    def preloading(self) -> list[str]:
        """The tools that read something once per process (they override :meth:`Tool.preload`)."""
        self._load()
        return [name for name, cls in self._tools.items() if _overrides(cls, "preload")]

    def suggest(self, name: str, n: int = 3) -> list[str]:
        self._load()
        return difflib.get_close_matches(name, list(self._tools), n=n, cutoff=0.6)

    # ------------------------------------------------------------------ schemas
    def descriptor(self, name: str) -> dict[str, Any]:
        return self.get(name).descriptor()

    def describe(self, name: str) -> str:
        return descriptor_line(self.descriptor(name))

    def json_schema(self, name: str) -> dict[str, Any]:
        """OpenAI-style function schema, for native function calling."""
        cls = self.get(name)
        properties = {}
        for param, spec in cls.input_parameters.items():
            properties[param] = parameter_schema(spec["type"], spec["description"])
        return {
            "type": "function",
            "function": {
                "name": cls.name,
                "description": cls.description,
                "parameters": {
                    "type": "object",
                    "properties": properties,
                    "required": cls.required_parameters(),
                },
            },
        }

    def json_schemas(self, names: list[str] | None = None) -> list[dict[str, Any]]:
        return [self.json_schema(n) for n in (names if names is not None else self.names())]


def _validate(cls: type[Tool]) -> None:
    """The declared schema must agree with ``run``'s signature (STYLE: schemas are checked)."""
    for attr in ("name", "description", "input_parameters", "output_parameters"):
        if not hasattr(cls, attr):
            raise TypeError(f"tool {cls.__name__} lacks {attr}")
    for param, spec in cls.input_parameters.items():
        if set(spec) != {"type", "description"}:
            raise TypeError(f"{cls.name}.{param}: a parameter needs exactly a type and a description")
        if spec["type"] not in _SCHEMA_TYPES:
            raise TypeError(f"{cls.name}.{param}: unknown type {spec['type']!r}")
    run = inspect.signature(cls.run)
    accepted = [p for p in run.parameters if p != "self"]
    has_var_kw = any(p.kind is p.VAR_KEYWORD for p in run.parameters.values())
    if not has_var_kw and accepted != list(cls.input_parameters):
        raise TypeError(
            f"{cls.name}.run takes {accepted}, but the schema declares {list(cls.input_parameters)}"
        )
    unknown_defaults = set(cls.defaults) - set(cls.input_parameters)
    if unknown_defaults:
        raise TypeError(f"{cls.name}: defaults for undeclared parameters {sorted(unknown_defaults)}")
    if cls.generates_random_values != _overrides(cls, "adopt"):
        raise TypeError(f"{cls.name}: a tool generates random values exactly when it overrides adopt")
    both = set(cls.state_records) & set(cls.incidental_records)
    if both:
        raise TypeError(f"{cls.name}: records {sorted(both)} are declared both state and incidental")
    unknown_renames = set(cls.renamed_parameters.values()) - set(cls.input_parameters)
    if unknown_renames:
        raise TypeError(f"{cls.name}: parameters renamed to undeclared names {sorted(unknown_renames)}")


def _overrides(cls: type[Tool], method: str) -> bool:
    """Whether ``cls`` (or a base below :class:`Tool`) defines its own ``method``."""
    return next(klass for klass in cls.__mro__ if method in vars(klass)) is not Tool


LEVEL_1_2 = ToolSet("level-1-2", __package__ + ".level12")
LEVEL_3 = ToolSet("level-3", __package__ + ".level3")
TOOLSETS = {LEVEL_1_2.name: LEVEL_1_2, LEVEL_3.name: LEVEL_3}


def toolset(name: str) -> ToolSet:
    try:
        return TOOLSETS[name]
    except KeyError:
        raise ValueError(f"unknown tool set {name!r}; expected one of {sorted(TOOLSETS)}") from None
