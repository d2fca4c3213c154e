"""What ``apibank evaluate`` checks before it loads a model: arguments, output folder, chat template and
endpoint. Each failed check is a :class:`UsageError` whose text says what is wrong and what to do;
the console script prints it as one line and exits with status 2."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from apibank.errors import OutputError, UsageError, require_extra


# ------------------------------------------------------------------------------------ models
_GGUF_SCALARS = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}  # value type -> bytes
_GGUF_STRING, _GGUF_ARRAY = 8, 9


def gguf_metadata_string(path: Path, wanted: str) -> str | None:
    """One string value of a GGUF file's metadata, read without loading the file: the header's
    key-value pairs are walked and every other value skipped (arrays of the vocabulary included)."""
    import struct

    def read(handle, size: int) -> bytes:
        data = handle.read(size)
        if len(data) != size:
            raise ValueError("the file ends inside its metadata")
        return data

    def number(handle, fmt: str) -> int:
        return struct.unpack("<" + fmt, read(handle, struct.calcsize(fmt)))[0]

    def skip(handle, value_type: int, depth: int = 0) -> None:
        if value_type in _GGUF_SCALARS:
            handle.seek(_GGUF_SCALARS[value_type], 1)
        elif value_type == _GGUF_STRING:
            handle.seek(number(handle, "Q"), 1)
        elif value_type == _GGUF_ARRAY and depth < 4:
            item_type, count = number(handle, "I"), number(handle, "Q")
            if item_type in _GGUF_SCALARS:
                handle.seek(_GGUF_SCALARS[item_type] * count, 1)
            else:
                for _ in range(count):
                    skip(handle, item_type, depth + 1)
        else:
            raise ValueError(f"unknown metadata value type {value_type}")

    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            if read(handle, 4) != b"GGUF":
                raise ValueError("it does not start with 'GGUF'")
            version = number(handle, "I")
            if version < 2:
                raise ValueError(f"GGUF version {version} is too old")
            number(handle, "Q")  # tensor count
            for _ in range(number(handle, "Q")):
                key_length = number(handle, "Q")
                if key_length > 65536:
                    raise ValueError("a metadata key is implausibly long")
                key = read(handle, key_length).decode("utf-8", errors="replace")
                value_type = number(handle, "I")
                if key == wanted and value_type == _GGUF_STRING:
                    length = number(handle, "Q")
                    if length > size:
                        raise ValueError(f"the value of {wanted} is longer than the file")
                    return read(handle, length).decode("utf-8", errors="replace")
                skip(handle, value_type)
                if handle.tell() > size:
                    raise ValueError("the metadata runs past the end of the file")
    except (OSError, ValueError, struct.error) as error:
        raise UsageError(f"--model {path}: not a readable GGUF file ({error})") from None
    return None


def gguf_chat_template(path: Path) -> str | None:
    """The chat template a GGUF file carries in its metadata (None if it has none)."""
    return gguf_metadata_string(path, "tokenizer.chat_template")


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


def check_extras(backend: str, gguf: bool) -> None:
    """The extra a local model needs: vllm, gguf for a .gguf file (torch included), else torch."""
    if backend == "vllm":
        require_extra("vllm", ("vllm",), "--backend vllm")
    elif gguf:
        require_extra("gguf", ("torch", "gguf", "accelerate"), "a .gguf model")
    else:
        require_extra("torch", ("torch",), f"--backend {backend}")


def check_model(model: str, backend: str, revision: str | None) -> dict[str, Any]:
    """Where ``model`` is (a local file, a local folder, a cached or a remote Hub repo); raises
    :class:`UsageError` when it cannot be loaded, or :class:`MissingExtra` when its extras are not
    installed, before anything heavy runs."""
    if backend == "openai" or model == "oracle":
        return {"kind": "remote"}
    from apibank.generate.backends.loading import resolve_model

    check_extras(backend, model.endswith(".gguf"))
    source = resolve_model(model)
    if source.kind == "gguf":
        return {"kind": "gguf", "path": Path(source.label)}
    if source.kind == "folder":
        path = Path(source.location)
        if not (path / "config.json").is_file():
            check_extras(backend, gguf=True)
        return {"kind": "folder", "path": path}
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


# ---------------------------------------------------------------------------- output folder
def check_output(output: Path) -> None:
    """The output folder can be written (without creating it)."""
    if output.exists() and not output.is_dir():
        raise OutputError(f"--output {output}: a file, not a folder; give a folder")
    existing = output
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise OutputError(f"--output {output}: {existing} is a file, so the folder cannot be created")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputError(f"--output {output}: {existing} is not writable; give another --output")


def check_resume(output: Path, *, fmt: str, model: str) -> int:
    """How many predictions a rerun would keep; a file from another model or format is refused now
    (the decoding settings are compared by the run itself)."""
    path = output / "predictions.jsonl"
    if not path.is_file():
        return 0
    try:
        with path.open(encoding="utf-8") as handle:
            first = handle.readline()
        record = json.loads(first) if first.strip() else None
    except (OSError, ValueError):
        return 0  # the run itself reports a damaged file precisely
    if not isinstance(record, dict):
        return 0
    for key, value in (("format", fmt), ("model", model)):
        if record.get(key) not in (None, value):
            raise UsageError(
                f"{path} holds predictions with {key}={record.get(key)!r}, but this run has {key}={value!r}; "
                "give another --output, or --overwrite to discard them"
            )
    from apibank.generate.predictions import PredictionsFileError, read_predictions

    try:
        return len(read_predictions(path, allow_torn_tail=True))  # what the run keeps: a torn last line is not
    except PredictionsFileError:
        return 0  # the run itself reports a damaged file precisely


# ---------------------------------------------------------------------------------- endpoint
def check_endpoint(base_url: str, api_key: str | None, timeout: float) -> None:
    """The server answers at all (``GET {base_url}/models``, once); only an unreachable one is an error."""
    from apibank.generate.backends.http import EndpointError, HttpClient

    if not base_url.startswith(("http://", "https://")):
        raise UsageError(f"--base-url {base_url}: give the API root as a URL, e.g. http://127.0.0.1:8000/v1")
    client = HttpClient(base_url, api_key=api_key, timeout=min(timeout, 10.0), max_retries=0)
    try:
        client.request("/models")
    except EndpointError as error:
        if error.status in (401, 403):
            raise UsageError(f"--base-url {base_url}: the server refuses the API key (HTTP {error.status}); set "
                             "the key in the variable named by --api-key-env") from None
        if error.status is None:
            raise UsageError(f"--base-url {base_url}: no server answers ({error.reason}); start it or fix "
                             "the URL") from None
