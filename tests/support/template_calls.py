"""Calls written through a family's real chat template: what a model of that template writes for given calls
(the assistant turn the template renders, less the prompt), for the tests that read calls back and for the
parity checks against vLLM's parsers."""

from __future__ import annotations

import json
import os
from typing import Any

from support.native_calls import Call
from support.paths import REAL_TEMPLATES_DIR

MANIFEST: list[dict[str, Any]] = json.loads((REAL_TEMPLATES_DIR / "manifest.json").read_text(encoding="utf-8"))[
    "templates"]
SHIPPED = {entry["family"]: entry for entry in MANIFEST if entry["shipped"]}
# The shipped templates that render assistant calls (the others show no earlier calls).
RENDERING = sorted(family for family, entry in SHIPPED.items() if entry["native_call_source"] == "template")
USER = {"role": "user", "content": "Hi"}
PROBE_TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": {
    "type": "object", "properties": {"city": {"type": "string", "description": "City."}}}}}]


def template_text(family: str) -> str:
    return (REAL_TEMPLATES_DIR / SHIPPED[family]["file"]).read_text(encoding="utf-8")


def render(template: str, messages: list[dict], generation_prompt: bool) -> str:
    from transformers.utils.chat_template_utils import render_jinja_template

    rendered, _ = render_jinja_template(conversations=[messages], tools=PROBE_TOOLS, chat_template=template,
                                        add_generation_prompt=generation_prompt, bos_token="<s>", eos_token="</s>")
    return rendered[0]


def _call_form(entry: dict) -> tuple[bool, bool]:
    """(arguments as JSON text, content None) of the first probe form the template renders a call in."""
    for form, behaviour in entry["behaviour"].items():
        if form != "plain" and not behaviour["raises"] and behaviour["call_rendered"]:
            return form.startswith("args_json"), form.endswith("none")
    raise AssertionError(f"{entry['family']}: renders no call")


def rendered_output(template: str, entry: dict, calls: list[Call], prompt: str) -> str:
    """What a model of this template writes for ``calls``: the assistant turn rendered by the template, less
    the prompt (the text shared with the generation prompt, cut before a special token it ends inside)."""
    as_json, content_none = _call_form(entry)
    tool_calls = [{"id": f"call{i}abcd"[:9].ljust(9, "x"), "type": "function",
                   "function": {"name": n, "arguments": json.dumps(a) if as_json else a}}
                  for i, (n, a) in enumerate(calls)]
    full = render(template, [USER, {"role": "assistant", "content": None if content_none else "",
                                    "tool_calls": tool_calls}], False)
    shared = len(os.path.commonprefix([full, prompt]))
    opening = full.rfind("<", 0, shared)
    if opening >= 0 and ">" not in full[opening:shared]:
        shared = opening
    return full[shared:]


class TemplateWriter:
    """``writer(calls)``: the text a model of one shipped template writes for ``calls``."""

    def __init__(self, family: str):
        self.family = family
        self.template = template_text(family)
        self.prompt = render(self.template, [USER], True)

    def __call__(self, calls: list[Call]) -> str:
        return rendered_output(self.template, SHIPPED[self.family], calls, self.prompt)
