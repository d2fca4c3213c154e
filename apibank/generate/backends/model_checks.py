"""What a local model or Hub id holds, checked before anything heavy loads: whether it is there at all,
and whether it ships a chat template (for the prompt formats that need one)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from apibank.benchmark import TEMPLATE_MODES
from apibank.errors import UsageError, require_extra
from apibank.generate.backends.gguf_metadata import gguf_chat_template
from apibank.generate.backends.loading import resolve_model


def read_chat_template(path: str | os.PathLike[str]) -> str:
    """A chat template file's text, checked to compile as Jinja (ValueError naming the file if not)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"--chat-template {path}: cannot read it ({error})") from None
    if not text.strip():
        raise ValueError(f"--chat-template {path}: the file is empty")
    try:
        from transformers.utils.chat_template_utils import _compile_jinja_template

        _compile_jinja_template(text)
    except ImportError:  # a transformers without this helper: the first render reports errors instead
        pass
    except Exception as error:
        raise ValueError(f"--chat-template {path}: not a valid Jinja template ({error})") from None
    return text


def _folder_has_template(folder: Path) -> bool:
    if (folder / "chat_template.jinja").is_file() or (folder / "chat_template.json").is_file():
        return True
    config = folder / "tokenizer_config.json"
    try:
        return bool(json.loads(config.read_text(encoding="utf-8")).get("chat_template"))
    except (OSError, ValueError, AttributeError):
        return False


def _cached_file(model: str, filename: str, revision: str | None) -> str | None:
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(model, filename, revision=revision)
    return found if isinstance(found, str) else None


def locate_model(model: str, revision: str | None = None) -> dict[str, Any]:
    """Where ``model`` is (a local file, a local folder, a cached or a remote Hub repo); raises
    :class:`UsageError` when it cannot be loaded, before anything heavy runs."""
    source = resolve_model(model)
    if source.kind == "gguf":
        return {"kind": "gguf", "path": Path(source.label)}
    if source.kind == "folder":
        path = Path(source.location)
        return {"kind": "folder", "path": path, "gguf": not (path / "config.json").is_file()}
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(model)
    except HFValidationError as error:
        raise UsageError(f"--model {model}: not a local path and not a valid Hub model id ({error})") from None
    if _cached_file(model, "config.json", revision):
        return {"kind": "cached", "repo": model}
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        raise UsageError(
            f"--model {model}: no such local file or folder, and not in the local Hugging Face cache "
            f"({constants.HF_HUB_CACHE}) while offline mode is on (HF_HUB_OFFLINE); check the path, or download "
            "the model first"
        )
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError

    try:
        HfApi().model_info(model, revision=revision, timeout=10)
    except RepositoryNotFoundError:
        raise UsageError(f"--model {model}: no such local path and no such model on the Hub (or it is private: "
                         "log in with `hf auth login`); check the name") from None
    except RevisionNotFoundError:
        raise UsageError(f"--revision {revision}: model {model} has no such revision") from None
    except GatedRepoError:
        raise UsageError(f"--model {model}: a gated model; accept its terms on the Hub and log in") from None
    except Exception as error:  # noqa: BLE001 (no network, DNS, proxy...)
        raise UsageError(
            f"--model {model}: no such local file or folder, not in the local cache, and the Hub cannot be "
            f"reached ({type(error).__name__}); check the path or the network"
        ) from None
    return {"kind": "hub", "repo": model}


def has_chat_template(where: dict[str, Any], revision: str | None) -> bool | None:
    """Whether the model ships a chat template (None: cannot tell without downloading)."""
    kind = where["kind"]
    if kind == "gguf":
        return gguf_chat_template(where["path"]) is not None
    if kind == "folder":
        folder = where["path"]
        if (folder / "config.json").is_file():
            return _folder_has_template(folder)
        return any(gguf_chat_template(p) is not None for p in folder.glob("*.gguf"))
    if kind == "cached":
        repo = where["repo"]
        if _cached_file(repo, "chat_template.jinja", revision):
            return True
        config = _cached_file(repo, "tokenizer_config.json", revision)
        if config:
            return _folder_has_template(Path(config).parent)
        return None
    return None


def check_chat_template(model: str, where: dict[str, Any], fmt: str | None, mode: str,
                        revision: str | None = None) -> None:
    """A ``--chat-template`` file compiles, and a format that needs a template (chat, tools; paper with
    ``on``) has one; ``fmt`` None: only the file is checked."""
    if mode not in TEMPLATE_MODES:
        try:
            read_chat_template(mode)
        except ValueError as error:
            raise UsageError(f"{error}; give a Jinja chat template file, or auto/on/off") from None
        return
    if fmt is None or not (fmt in ("chat", "tools") or mode == "on"):
        return
    if has_chat_template(where, revision) is False:
        need = f"--format {fmt}" if fmt != "paper" else "--chat-template on"
        raise UsageError(f"{need} needs a chat template and {model} has none; give one with "
                         "--chat-template FILE" + (", or use --format paper" if fmt != "paper" else ""))


def check_hf_model(model: str, options: dict[str, Any], fmt: str | None) -> dict[str, Any]:
    """The checks that the backends loading a Hugging Face tokenizer share: the model is there, a
    ``.gguf`` one has the gguf extra that converts it, and its chat template suits the format."""
    if model.lower().endswith(".gguf"):  # named so: the extra first, whether the path is right or not
        require_extra("gguf", ("torch", "gguf", "accelerate"), "a .gguf model")
    where = locate_model(model, options.get("revision"))
    if where.get("gguf"):
        require_extra("gguf", ("torch", "gguf", "accelerate"), "a .gguf model")
    check_chat_template(model, where, fmt, options.get("chat_template") or "auto", options.get("revision"))
    check_template_kwargs(model, where, fmt, options)
    return where


def check_template_kwargs(model: str, where: dict[str, Any], fmt: str | None, options: dict[str, Any]) -> None:
    """``--chat-template-kwargs`` is refused where no template reads it: the paper format sent as plain text
    (``--chat-template off``, or ``auto`` and a model without a template); ignoring it would run something
    other than what was asked for."""
    if fmt != "paper" or not options.get("chat_template_kwargs"):
        return
    mode = options.get("chat_template") or "auto"
    if mode == "off":
        why = "--chat-template off sends the paper prompt as plain text"
    elif mode == "auto" and has_chat_template(where, options.get("revision")) is False:
        why = f"{model} has no chat template, so --format paper sends its prompt as plain text"
    else:
        return
    raise UsageError(f"--chat-template-kwargs: {why} and no template reads them; drop --chat-template-kwargs, or "
                     "give a template (--chat-template on or FILE)")
