"""``--backend auto``: the fastest engine installed that can run the model with the options given."""

from __future__ import annotations

import json
from importlib.util import find_spec
from pathlib import Path
from typing import Iterable

from apibank.generate.backends.registry import BACKEND_REGISTRY

AUTO = "auto"
# Tried in this order: vLLM's engine where it is installed, transformers otherwise; a server only when
# its address is given.
AUTO_ORDER = ("vllm", "transformers")


def vllm_installed() -> bool:
    try:
        return find_spec("vllm") is not None
    except (ImportError, ValueError):
        return False


def choose_backend(model: str, requested: str, given_flags: Iterable[str]) -> tuple[str, str | None]:
    """``(backend, why)``: ``requested`` itself unless it is ``auto`` (then ``why`` says why the backend
    was chosen). ``auto`` takes the OpenAI-compatible backend when ``--base-url`` is given, else the
    first of :data:`AUTO_ORDER` that is installed, supports the model and takes every flag given."""
    if requested != AUTO:
        return requested, None
    given = set(given_flags)
    if "--base-url" in given:
        return "openai", "auto: --base-url given"
    skipped = []
    for name in AUTO_ORDER:
        if name == "vllm":
            if not vllm_installed():
                skipped.append("vLLM is not installed")
                continue
            unsupported = vllm_unsupported(model)
            if unsupported:
                skipped.append(unsupported)
                continue
        foreign = given - _flags(name)
        if foreign:
            skipped.append(f"--backend {name} does not take {', '.join(sorted(foreign))}")
            continue
        return name, "auto: " + ("; ".join(skipped + [f"{name} chosen"]) if skipped else f"{name} is installed")
    return "transformers", "auto: " + "; ".join(skipped)


def _flags(name: str) -> set[str]:
    return {option.cli_flag for option in BACKEND_REGISTRY.get(name).options}


def vllm_unsupported(model: str) -> str | None:
    """Why vLLM cannot run ``model`` (None when it can, or when that cannot be told without loading it):
    a local model whose architecture the installed vLLM does not list."""
    config = Path(model).expanduser() / "config.json"
    if not config.is_file():
        return None
    try:
        architectures = json.loads(config.read_text(encoding="utf-8")).get("architectures") or []
        from vllm import ModelRegistry

        supported = set(ModelRegistry.get_supported_archs())
    except Exception:  # noqa: BLE001 (an odd config or vLLM build: let vLLM itself say at load time)
        return None
    missing = [name for name in architectures if name not in supported]
    return f"vLLM does not support {', '.join(missing)}" if missing and len(missing) == len(architectures) else None
