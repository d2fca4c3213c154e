"""Shared fixtures. The whole suite runs with the network cut: only loopback connections work."""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "apibank-upstream"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


class NetworkBlocked(RuntimeError):
    pass


def _is_loopback(address) -> bool:
    if isinstance(address, tuple) and address:
        host = address[0]
    else:  # AF_UNIX paths and the like never leave the machine
        return True
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _guarded_connect(self, address):
    if not _is_loopback(address):
        raise NetworkBlocked(f"test tried to reach {address!r}; only loopback is allowed")
    return _real_connect(self, address)


def _guarded_connect_ex(self, address):
    if not _is_loopback(address):
        raise NetworkBlocked(f"test tried to reach {address!r}; only loopback is allowed")
    return _real_connect_ex(self, address)


def _guarded_getaddrinfo(host, *args, **kwargs):
    if host not in (None, "localhost") and not _is_loopback((host,)):
        raise NetworkBlocked(f"test tried to resolve {host!r}; only loopback is allowed")
    return _real_getaddrinfo(host, *args, **kwargs)


socket.socket.connect = _guarded_connect
socket.socket.connect_ex = _guarded_connect_ex
socket.getaddrinfo = _guarded_getaddrinfo


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"the upstream data copy is missing at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture
def fresh_inspect_display(monkeypatch):
    """inspect-ai keeps one display object per process, bound to the output of the test that made it."""
    from inspect_ai._display.core import active

    monkeypatch.setattr(active, "_active_display", None)
