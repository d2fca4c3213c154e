"""A GGUF file's metadata, read from its header without loading the file (the chat template a GGUF
model carries, say)."""

from __future__ import annotations

from pathlib import Path

from apibank.errors import UsageError

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
