"""The real chat templates collected from public sources render as their manifest records.

Each shipped template is rendered through transformers' own renderer over a plain system + user
conversation and over a tool conversation (tools, an assistant tool call, its result) in four forms:
arguments as a dict or as JSON text, the call turn's content None or "". Which forms a template
refuses, or renders without the call or the result, is a recorded finding, asserted as recorded.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from support.paths import REAL_TEMPLATES_DIR

render_jinja_template = getattr(
    pytest.importorskip("transformers.utils.chat_template_utils"), "render_jinja_template", None
)
if render_jinja_template is None:
    pytest.skip("this transformers has no render_jinja_template", allow_module_level=True)

MANIFEST = json.loads((REAL_TEMPLATES_DIR / "manifest.json").read_text(encoding="utf-8"))
ENTRIES = MANIFEST["templates"]
SHIPPED = [entry for entry in ENTRIES if entry["shipped"]]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the weather of a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "City name."}},
                "required": ["city"],
            },
        },
    }
]
SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
USER = {"role": "user", "content": "What is the weather in the capital of France?"}
VARIANTS = {
    "args_dict_content_none": ({"city": "Paris"}, None),
    "args_dict_content_empty": ({"city": "Paris"}, ""),
    "args_json_content_none": ('{"city": "Paris"}', None),
    "args_json_content_empty": ('{"city": "Paris"}', ""),
}


def tool_conversation(arguments: dict | str, content: str | None) -> list[dict]:
    call = {"id": "call0abcd", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}
    return [
        SYSTEM,
        USER,
        {"role": "assistant", "content": content, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call0abcd", "name": "get_weather", "content": '{"temperature": 18}'},
    ]


def render(template: str, messages: list[dict], tools: list[dict] | None = None) -> str:
    rendered, _ = render_jinja_template(
        conversations=[messages],
        tools=tools,
        chat_template=template,
        add_generation_prompt=True,
        bos_token="<s>",
        eos_token="</s>",
    )
    return rendered[0]


def template_text(entry: dict) -> str:
    return (REAL_TEMPLATES_DIR / entry["file"]).read_text(encoding="utf-8")


def test_manifest_names_each_family_once_and_every_shipped_file():
    families = [entry["family"] for entry in ENTRIES]
    assert len(families) == len(set(families))
    on_disk = {path.name for path in REAL_TEMPLATES_DIR.glob("*.jinja")}
    assert on_disk == {entry["file"] for entry in SHIPPED}


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda entry: entry["family"])
def test_manifest_entry_is_complete(entry):
    for key in ("hub_repo", "source_repo", "source_path", "licence", "native_call_example", "thinking"):
        assert entry[key], key
    assert len(entry["source_commit"]) == 40 and int(entry["source_commit"], 16) >= 0
    assert isinstance(entry["template_kwargs"], dict)
    assert set(entry["behaviour"]) == {"plain", *VARIANTS}


@pytest.mark.parametrize("entry", SHIPPED, ids=lambda entry: entry["family"])
def test_shipped_template_is_the_collected_bytes(entry):
    data = (REAL_TEMPLATES_DIR / entry["file"]).read_bytes()
    assert len(data) == entry["bytes"]
    assert hashlib.sha256(data).hexdigest() == entry["sha256"]


@pytest.mark.parametrize("entry", SHIPPED, ids=lambda entry: entry["family"])
def test_system_and_user_render_as_recorded(entry):
    recorded = entry["behaviour"]["plain"]
    if recorded["raises"]:
        with pytest.raises(Exception) as caught:
            render(template_text(entry), [SYSTEM, USER])
        assert type(caught.value).__name__ == recorded["raises"]
        return
    text = render(template_text(entry), [SYSTEM, USER])
    assert USER["content"] in text
    assert (SYSTEM["content"] in text) == recorded["system_rendered"]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("entry", SHIPPED, ids=lambda entry: entry["family"])
def test_tool_conversation_renders_as_recorded(entry, variant):
    recorded = entry["behaviour"][variant]
    messages = tool_conversation(*VARIANTS[variant])
    if recorded["raises"]:
        with pytest.raises(Exception) as caught:
            render(template_text(entry), messages, TOOLS)
        assert type(caught.value).__name__ == recorded["raises"]
        return
    text = render(template_text(entry), messages, TOOLS)
    assert USER["content"] in text
    assert ("Paris" in text) == recorded["call_rendered"]
    assert ("temperature" in text) == recorded["result_rendered"]
    assert ("City name." in text) == recorded["tools_rendered"]


@pytest.mark.parametrize(
    "entry",
    [entry for entry in SHIPPED if entry["native_call_source"] == "template"],
    ids=lambda entry: entry["family"],
)
def test_native_call_example_is_what_the_template_renders(entry):
    texts = []
    for variant, (arguments, content) in VARIANTS.items():
        if not entry["behaviour"][variant]["raises"]:
            texts.append(render(template_text(entry), tool_conversation(arguments, content), TOOLS))
    assert any(entry["native_call_example"] in text for text in texts)
