"""A backend written as a third party would write one: this module, and one registry line in the test
(``BACKEND_REGISTRY.register("toy", "support.toy_backend:ToyBackend")``). Its options become flags of
``apibank evaluate`` and ``apibank agent`` with no other change."""

from __future__ import annotations

import json
from typing import Any

from apibank.errors import UsageError
from apibank.generate.backends import Backend, Completion
from apibank.generate.backends.options import Option


class ToyBackend(Backend):
    """Answers every prompt with ``reply`` (``shout``: in capitals)."""

    name = "toy"
    options = (
        Option("reply", "what every answer says", default="API-Request: [GetToday()]", metavar="TEXT"),
        Option("shout", "answer in capitals", kind="switch", default=False),
        Option("patience", "seconds the toy waits for nothing", type=float, default=1.0, minimum=0.5),
    )

    @classmethod
    def check_options(cls, model: str, options: dict[str, Any], *, fmt: str | None = None) -> None:
        if not options["reply"].strip():
            raise UsageError("--reply: give a non-empty answer")

    def __init__(self, model: str, *, reply: str, shout: bool = False, patience: float = 1.0) -> None:
        self.model_id, self.reply, self.shout, self.patience = model, reply, shout, patience

    def render(self, conversation) -> str:
        return conversation.plain_text if conversation.plain_text is not None else json.dumps(conversation.messages)

    def generate(self, conversations, prompts, settings):
        text = self.reply.upper() if self.shout else self.reply
        return [Completion(text=text, raw=text) for _ in conversations]

    def info(self) -> dict[str, Any]:
        return {"backend": self.name, "model_id": self.model_id, "model_revision": None, "dtype": None,
                "reply": self.reply, "shout": self.shout}
