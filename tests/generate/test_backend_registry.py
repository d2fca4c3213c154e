"""The backend registry: one table that ``make_backend`` and ``--backend`` read, duplicates refused,
unknown names answered with the closest registered ones, a new backend reachable by one registration."""

from __future__ import annotations

import pytest

import apibank_cli
from apibank.data.rows import iter_rows
from apibank.generate import build_conversation
from apibank.generate.backends import (
    BACKEND_REGISTRY,
    BACKENDS,
    Backend,
    Completion,
    DecodingSettings,
    OracleBackend,
    UnknownName,
    make_backend,
)
from apibank.generate.backends.registry import Registry


class EchoBackend(Backend):
    """Answers with the prompt's last characters: what the README's extending section shows."""

    name = "echo"

    def __init__(self, model: str, *, tail: int = 12) -> None:
        self.model_id, self.tail = model, tail

    def render(self, conversation):
        return conversation.plain_text or ""

    def generate(self, conversations, prompts, settings):
        return [Completion(text=prompt[-self.tail:], raw=prompt[-self.tail:]) for prompt in prompts]


@pytest.fixture
def scratch_registry(monkeypatch):
    """The real registry, with registrations made in the test undone afterwards."""
    monkeypatch.setattr(BACKEND_REGISTRY, "_entries", dict(BACKEND_REGISTRY._entries))
    return BACKEND_REGISTRY


@pytest.mark.parametrize("name", BACKEND_REGISTRY.names())
def test_every_entry_is_a_backend_class_under_its_own_name(name):
    backend_class = BACKEND_REGISTRY.get(name)
    assert issubclass(backend_class, Backend) and backend_class.name == name


def test_model_backends_and_scripted_ones():
    assert BACKENDS == ("transformers", "vllm", "openai")
    assert BACKEND_REGISTRY.names(scripted=True) == ("oracle",)
    assert isinstance(make_backend("oracle", backend="vllm"), OracleBackend)  # whatever --backend says


@pytest.mark.parametrize(
    "backend, message",
    [
        ("vlm", r"unknown backend 'vlm'; did you mean 'vllm'\? \(choose from: transformers, vllm, openai\)"),
        ("transformer", r"did you mean 'transformers'\?"),
        ("gguf", r"^unknown backend 'gguf' \(choose from: transformers, vllm, openai\)$"),
        ("oracle", r"unknown backend 'oracle'"),  # scripted backends are chosen by --model, not --backend
    ],
)
def test_unknown_backend_names_the_closest(backend, message):
    with pytest.raises(UnknownName, match=message):
        make_backend("some/model", backend=backend)
    assert issubclass(UnknownName, ValueError)


def test_a_name_is_registered_once(scratch_registry):
    with pytest.raises(ValueError, match="backend 'openai' is registered twice"):
        scratch_registry.register("openai", EchoBackend)
    with pytest.raises(ValueError, match="registered twice"):
        Registry("backend", [("a", EchoBackend), ("a", OracleBackend)])


def test_a_registered_backend_is_reachable_through_make_backend(scratch_registry, data_dir):
    scratch_registry.register("echo", EchoBackend)
    backend = make_backend("any-model", backend="echo", tail=5, unset=None)  # None options are left out
    assert isinstance(backend, EchoBackend) and backend.model_id == "any-model" and backend.tail == 5
    row = next(iter_rows("level-1", data_dir))
    conversation = build_conversation(row, "paper")
    (completion,) = backend.generate([conversation], [backend.render(conversation)], DecodingSettings())
    assert completion.text == conversation.plain_text[-5:]


def test_an_entry_named_by_its_path_is_imported_on_first_use(scratch_registry):
    scratch_registry.register("gold", "apibank.generate.backends.base:OracleBackend")
    assert scratch_registry._entries["gold"].target == "apibank.generate.backends.base:OracleBackend"
    assert scratch_registry.get("gold") is OracleBackend


def test_the_decorator_registers_a_scripted_backend(scratch_registry):
    @scratch_registry.register("always-empty", scripted=True)
    class AlwaysEmpty(OracleBackend):
        name = "always-empty"

    assert isinstance(make_backend("always-empty", backend="transformers"), AlwaysEmpty)


def test_the_cli_offers_the_registered_backends(capsys):
    with pytest.raises(SystemExit) as exit_info:
        apibank_cli.main(["evaluate", "--model", "x", "--backend", "nope"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'nope'" in err and all(name in err for name in BACKENDS)
