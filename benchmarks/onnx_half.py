"""Halve an ONNX file's float32 weights for transport, and restore them to float32, with no onnx package.

The GPU check carries the ToolSearcher's embedding model (69 MB of float32 weights) to a machine with
no network, inside a 48 MiB folder: its weights travel as float16 and come back as float32 rounded to
float16 (ToolSearcher scores may then differ from a standard run in the last digits; the check
measures speed). The file is rewritten at the protobuf wire level: ModelProto field 7 is the graph,
GraphProto field 5 its initializers, TensorProto field 2 the element type (1 float32, 10 float16) and
field 9 the raw bytes; every other field is copied as it is.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

FLOAT, FLOAT16 = 1, 10


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _fields(data: bytes):
    """(field number, wire type, raw value bytes or int) for each field of a message, in order."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 1:
            value, at = data[at : at + 8], at + 8
        elif wire == 2:
            length, at = _varint(data, at)
            value, at = data[at : at + length], at + length
        elif wire == 5:
            value, at = data[at : at + 4], at + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield number, wire, value


def _encode(number: int, wire: int, value) -> bytes:
    key = _encode_varint(number << 3 | wire)
    if wire == 0:
        return key + _encode_varint(value)
    if wire == 2:
        return key + _encode_varint(len(value)) + value
    return key + value


def _tensor(data: bytes, source: int, target: int, names: set[str] | None) -> tuple[bytes, str | None]:
    fields = list(_fields(data))
    kind = next((v for n, w, v in fields if n == 2 and w == 0), None)
    name = next((v.decode() for n, w, v in fields if n == 8 and w == 2), "")
    has_raw = any(n == 9 and w == 2 for n, w, _ in fields)
    if kind != source or not has_raw or (names is not None and name not in names):
        return data, None
    from_type, to_type = (np.float32, np.float16) if source == FLOAT else (np.float16, np.float32)
    out = b""
    for number, wire, value in fields:
        if number == 2 and wire == 0:
            value = target
        elif number == 9 and wire == 2:
            value = np.frombuffer(value, dtype=from_type).astype(to_type).tobytes()
        out += _encode(number, wire, value)
    return out, name


def _convert(model: bytes, source: int, target: int, names: set[str] | None) -> tuple[bytes, list[str]]:
    converted: list[str] = []
    out = []
    for number, wire, value in _fields(model):
        if number == 7 and wire == 2:  # the graph
            graph = []
            for g_number, g_wire, g_value in _fields(value):
                if g_number == 5 and g_wire == 2:  # an initializer
                    g_value, name = _tensor(g_value, source, target, names)
                    if name is not None:
                        converted.append(name)
                graph.append(_encode(g_number, g_wire, g_value))
            value = b"".join(graph)
        out.append(_encode(number, wire, value))
    return b"".join(out), converted


def halve(source: Path, target: Path) -> list[str]:
    """Write ``target``: ``source`` with its float32 initializers as float16; returns their names."""
    data, names = _convert(source.read_bytes(), FLOAT, FLOAT16, None)
    target.write_bytes(data)
    return names


def restore(source: Path, target: Path, names: list[str]) -> None:
    """Write ``target``: the halved ``source`` with the initializers ``names`` back in float32."""
    data, converted = _convert(source.read_bytes(), FLOAT16, FLOAT, set(names))
    if sorted(converted) != sorted(names):
        raise ValueError(f"{source}: {len(names) - len(converted)} halved weights are missing")
    target.write_bytes(data)


if __name__ == "__main__":  # python onnx_half.py halve|restore SOURCE TARGET [NAMES.json]
    action, src, dst, *rest = sys.argv[1:]
    if action == "halve":
        Path(rest[0]).write_text(json.dumps(halve(Path(src), Path(dst))))
    else:
        restore(Path(src), Path(dst), json.loads(Path(rest[0]).read_text()))
