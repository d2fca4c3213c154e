"""``--backend auto``: the fastest engine installed that can run the model with the options given."""

from __future__ import annotations

import functools
import json
import os
import sys
import traceback
from importlib.util import find_spec
from pathlib import Path
from typing import Iterable

from apibank.errors import BrokenExtra
from apibank.generate.backends.registry import BACKEND_REGISTRY

AUTO = "auto"
# Tried in this order: vLLM's engine where it is installed, transformers otherwise; a server only when
# its address is given.
AUTO_ORDER = ("vllm", "transformers")


# PyPI's builds of these are CUDA builds: beside the CPU torch that vLLM's CPU build pins they fail to load
# ("operator torchvision::nms does not exist"), and transformers imports torchvision wherever it is
# installed. vLLM's text models need none of them.
TORCH_COMPANIONS = ("torchvision", "torchaudio", "torchcodec")


def _installed(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def vllm_installed() -> bool:
    return _installed("vllm")


@functools.cache
def vllm_import_error() -> Exception | None:
    """What ``from vllm import LLM`` raises here (None where it works). vLLM is imported in this process: the
    backend that takes it imports it next anyway, so a working vLLM costs nothing more (a probe in a
    subprocess would import it twice: 31 to 35 s each on 2 loaded cores, 23 s for a failing one)."""
    try:
        from vllm import LLM  # noqa: F401
    except Exception as error:  # noqa: BLE001 (any failure of a third-party import is reported, not raised)
        return error
    return None


@functools.cache
def torchvision_import_error() -> Exception | None:
    """What ``import torchvision`` raises where it is installed (None where it imports or is not there).
    transformers imports torchvision wherever it is installed, for text models too, and then fails with
    "Could not import module 'LlamaConfig'"; a broken torchaudio or torchcodec leaves text models running
    (tried with PyPI's CUDA builds beside the CPU torch), so only torchvision is checked."""
    if not _installed("torchvision"):
        return None
    try:
        import torchvision  # noqa: F401
    except Exception as error:  # noqa: BLE001 (any failure of a third-party import is reported, not raised)
        return error
    return None


def require_torchvision(what: str) -> None:
    """Raise :class:`~apibank.errors.BrokenExtra` (one line, with the fix) where an installed torchvision
    does not import, as vLLM's import check says it."""
    error = torchvision_import_error()
    if error is not None:
        raise BrokenExtra(f"{what}: {import_problem('torchvision', error)}")


def broken_companions(error: BaseException) -> list[str]:
    """The packages of :data:`TORCH_COMPANIONS` that ``error`` came from (its text or its traceback)."""
    frames = [frame.filename for frame in traceback.extract_tb(error.__traceback__)]
    return [name for name in TORCH_COMPANIONS
            if name in str(error) or any(f"{os.sep}{name}{os.sep}" in filename for filename in frames)]


def import_problem(what: str, error: BaseException) -> str:
    """``what does not import (the error): the fix``, one line short enough to be printed whole."""
    text = " ".join(str(error).split()) or type(error).__name__
    text = text if len(text) <= 80 else text[:77] + "..."
    culprits = broken_companions(error)
    if culprits:
        installed = [name for name in TORCH_COMPANIONS if _installed(name)] or culprits
        fix = (f"{' and '.join(culprits)} {'is a CUDA build' if len(culprits) == 1 else 'are CUDA builds'} "
               f"that cannot load beside this torch: {sys.executable} -m pip uninstall -y {' '.join(installed)}")
    else:
        fix = "install it in an environment of its own (docs/backends.md)"
    return f"{what} does not import ({text}): {fix}"


def choose_backend(model: str, requested: str, given_flags: Iterable[str]) -> tuple[str, str | None]:
    """``(backend, why)``: ``requested`` itself unless it is ``auto`` (then ``why`` says why the backend
    was chosen). ``auto`` takes the OpenAI-compatible backend when ``--base-url`` is given, else the
    first of :data:`AUTO_ORDER` that is installed, imports, supports the model and takes every flag given.
    Raises :class:`~apibank.errors.BrokenExtra` where vLLM does not import for a reason that breaks
    transformers too (a CUDA torchvision beside a CPU torch)."""
    if requested != AUTO:
        return requested, None
    given = set(given_flags)
    if "--base-url" in given:
        return "openai", "auto: --base-url given"
    skipped = []
    for name in AUTO_ORDER:
        if name == "vllm" and not vllm_installed():
            skipped.append("vLLM is not installed")
            continue
        foreign = given - _flags(name)
        if foreign:
            skipped.append(f"--backend {name} does not take {', '.join(sorted(foreign))}")
            continue
        if name == "vllm":  # imported only now that it would be taken
            error = vllm_import_error()
            if error is not None and broken_companions(error):
                # transformers imports them too: no engine runs in this environment until they are gone
                raise BrokenExtra(f"--backend auto: {import_problem('vLLM', error)}")
            problem = import_problem("vLLM", error) if error is not None else vllm_unsupported(model)
            if problem:
                skipped.append(problem)
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
