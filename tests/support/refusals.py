"""Making a model load a test failure, for the checks that must come before it."""

from __future__ import annotations

from typing import Any


def refuse_model_loads(monkeypatch: Any, before: str, *also: str) -> None:
    """Loading a model through the package (a backend at all), or calling any of ``also`` (dotted paths), fails
    the test with "a model loaded before ``before``"."""
    import apibank.generate.backends as backends

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"a model loaded before {before}")

    # pipeline first: imported while the other is patched, it would keep `refuse` after the test
    monkeypatch.setattr("apibank.pipeline.classic.make_backend", refuse)
    monkeypatch.setattr(backends, "make_backend", refuse)
    for target in also:
        monkeypatch.setattr(target, refuse)
