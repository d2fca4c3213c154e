"""Never a silent zero: the calls a chat template writes are read back with the run's reader before any
weights load (:mod:`apibank.generate.templates.readback`), on every real template shipped as a fixture,
and a template whose call markup no reader reads stops ``evaluate`` and ``agent`` in one line, exit 2."""

from __future__ import annotations

import json

import pytest
from support.paths import REAL_TEMPLATES_DIR, TEMPLATES_DIR
from support.refusals import refuse_model_loads
from support.tiny import build_tiny_model, train_tokenizer

from apibank.cli.main import main
from apibank.generate.backends.hf import TokenizerRendering
from apibank.generate.backends.openai import OpenAIBackend
from apibank.generate.stops import TURN_END_MARKERS
from apibank.generate.templates import CallsUnread, TemplateAdapter, check_calls_read
from apibank.generate.templates.probes import call_probe_tools
from apibank.generate.toolcalls import ParserChoice
from apibank.pipeline import load_rows

render_jinja_template = getattr(
    pytest.importorskip("transformers.utils.chat_template_utils"), "render_jinja_template", None
)
if render_jinja_template is None:
    pytest.skip("this transformers has no render_jinja_template", allow_module_level=True)

UNREAD = TEMPLATES_DIR / "unread_calls.jinja"
MANIFEST = json.loads((REAL_TEMPLATES_DIR / "manifest.json").read_text(encoding="utf-8"))
SHIPPED = {entry["family"]: entry["file"] for entry in MANIFEST["templates"] if entry["shipped"]}
# Templates that write earlier calls as JSON text (calls-as-text): nothing of the family's own to read back.
# kimi-k2-thinking: transformers' sandbox refuses its call rendering, so earlier calls go in as text
NOT_SHOWN = {"granite-3.3", "phi-4-mini", "deepseek-r1-distill", "smollm3", "kimi-k2-thinking"}


def adapter_for(text: str) -> TemplateAdapter:
    def render(messages, tools):
        rendered, _ = render_jinja_template(conversations=[messages], tools=tools, chat_template=text,
                                            add_generation_prompt=True, bos_token="<s>", eos_token="</s>")
        return rendered[0]

    return TemplateAdapter(render, text)


def read_back(text: str, parser: str | None = None) -> dict:
    choice = ParserChoice.make(parser, text)
    tools = call_probe_tools()
    return check_calls_read(adapter_for(text), lambda output, prompt: choice.read(output, tools),
                            reader=f"{choice.name or 'auto'}, test", end_markers=(*TURN_END_MARKERS, "</s>"))


@pytest.mark.parametrize("family", sorted(SHIPPED))
def test_every_real_template_writes_calls_its_reader_reads_back(family):
    record = read_back((REAL_TEMPLATES_DIR / SHIPPED[family]).read_text(encoding="utf-8"))
    assert record["result"] == ("not shown" if family in NOT_SHOWN else "read"), record
    assert set(record["probes"]) == {"one call", "two parallel calls"}


def test_a_probe_changes_nothing_the_rows_learnt():
    """GPT-OSS writes two calls of one turn only as text: the probe's need is not recorded as the rows'."""
    text = (REAL_TEMPLATES_DIR / SHIPPED["gpt-oss"]).read_text(encoding="utf-8")
    adapter = adapter_for(text)
    adapter.probe("tools")
    before = adapter.adaptations
    choice = ParserChoice.make(None, text)
    record = check_calls_read(adapter, lambda output, prompt: choice.read(output, call_probe_tools()), reader="x")
    assert record["probes"] == {"one call": "read",
                                "two parallel calls": "not shown (the template writes earlier calls as JSON text)"}
    assert adapter.adaptations == before


def test_markup_no_reader_reads_is_refused_in_one_line_showing_it():
    with pytest.raises(CallsUnread) as caught:
        read_back(UNREAD.read_text(encoding="utf-8"))
    message = str(caught.value)
    assert len(message.splitlines()) == 1
    assert "'<<call>>ProbeToolA1|{\"probe_key\": \"probe-value-3c8b\"}<</call>>'" in message
    assert "reads no call there, so every API row would score 0" in message
    assert "--tool-parser NAME" in message and "--response-template FILE" in message


def test_a_named_reader_that_reads_other_markup_is_refused():
    qwen = (REAL_TEMPLATES_DIR / SHIPPED["qwen2.5"]).read_text(encoding="utf-8")
    assert read_back(qwen, parser="hermes")["result"] == "read"
    with pytest.raises(CallsUnread, match=r"writes one call as '<tool_call>\\n\{\"name\": \"ProbeToolA1\".*"
                                          r"the run's reader \(mistral, test\) reads no call there"):
        read_back(qwen, parser="mistral")


def test_a_template_that_shows_no_calls_keeps_the_documented_format():
    record = read_back((TEMPLATES_DIR / "no_tool_calls.jinja").read_text(encoding="utf-8"))
    assert record["result"] == "not shown"


# ------------------------------------------------------------------------------ through the CLI
@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, data_dir):
    rows = load_rows(["level-1"], data_dir)[:10]
    corpus = [row["instruction"] + row["input"] + row["expected_output"] for row in rows]
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", corpus)


@pytest.fixture
def no_weights(monkeypatch):
    """Loading a model's weights (or a backend at all) is a test failure."""
    refuse_model_loads(monkeypatch, "the calls were read back", "transformers.AutoModelForCausalLM.from_pretrained")


@pytest.mark.parametrize("extra", [[], ["--prompts-only"]], ids=["evaluate", "prompts-only"])
def test_evaluate_stops_before_the_model_loads(extra, tiny_model, data_dir, tmp_path, capsys, no_weights):
    out = tmp_path / "out"
    assert main(["evaluate", "--model", str(tiny_model), "--backend", "transformers", "--format", "tools",
                 "--levels", "1", "--data-dir", str(data_dir), "--output", str(out), "--chat-template", str(UNREAD),
                 *extra]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and error.startswith("apibank evaluate: error: the chat template writes")
    assert "<<call>>ProbeToolA1|" in error and "(auto, from each output's text)" in error
    assert "--tool-parser NAME or --response-template FILE" in error and "whole message" not in error
    assert not out.exists()


def test_agent_stops_before_the_model_loads(tiny_model, data_dir, tmp_path, capsys, no_weights):
    out = tmp_path / "agent"
    assert main(["agent", "--model", str(tiny_model), "--backend", "transformers", "--tool-format", "native",
                 "--levels", "3", "--data-dir", str(data_dir), "--output", str(out),
                 "--chat-template", str(UNREAD)]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "<<call>>ProbeToolA1|" in error and "--tool-format text" in error
    assert not out.exists()


def test_prompts_only_records_the_read_back_and_the_named_reader(tiny_model, data_dir, tmp_path, capsys):
    out = tmp_path / "prompts"
    hermes = REAL_TEMPLATES_DIR / SHIPPED["qwen2.5"]
    assert main(["evaluate", "--model", str(tiny_model), "--backend", "transformers", "--format", "tools",
                 "--levels", "1", "--limit", "1", "--data-dir", str(data_dir), "--output", str(out),
                 "--prompts-only", "--chat-template", str(hermes), "--tool-parser", "hermes"]) == 0, capsys.readouterr()
    assert "; the template's calls read back: read" in capsys.readouterr().out
    renderer = TokenizerRendering(str(tiny_model), chat_template=str(hermes), tool_parser="hermes")
    assert renderer.check_calls_read()["result"] == "read"
    info = renderer.template_info()
    assert info["tool_parser"] == {"name": "hermes", "chosen_by": "flag"}
    assert info["calls_read_back"] == {"result": "read", "probes": {"one call": "read", "two parallel calls": "read"}}


def test_an_engine_already_loaded_refuses_before_generating(tiny_model, data_dir, tmp_path):
    """The library's evaluate() with a backend object: no row is generated."""
    from apibank.generate import TransformersBackend
    from apibank.pipeline.classic import evaluate

    engine = TransformersBackend(str(tiny_model), dtype="float32", device="cpu", chat_template=str(UNREAD))
    engine.generate = lambda *args, **kwargs: pytest.fail("generated before the calls were read back")
    with pytest.raises(CallsUnread):
        evaluate(str(tiny_model), backend=engine, fmt="tools", levels=["level-1"], limit=1, data_dir=data_dir,
                 output_dir=tmp_path / "out", progress=False)
    assert not (tmp_path / "out" / "predictions.jsonl").exists()


def test_an_endpoint_says_its_template_is_not_known_here():
    info = OpenAIBackend("m", base_url="http://127.0.0.1:9/v1").template_info()
    assert info["calls_read_back"] == {"result": "not checked",
                                       "why": "the endpoint's chat template is the server's, not known here"}


def test_the_tiny_models_own_template_is_read_back_from_its_tokenizer():
    """Through a real tokenizer's apply_chat_template, its end-of-turn token cutting the call turn."""
    renderer = TokenizerRendering.around(train_tokenizer(["some text"], 280))
    assert renderer.check_calls_read() == {"result": "read", "probes": {"one call": "read", "two parallel calls": "read"}}
    assert renderer.parser_choice().name == "hermes"


def test_an_agent_driver_on_a_loaded_engine_refuses_before_any_step(tiny_model):
    from apibank.agent.model_agent import AgentSetupError, ModelDriver
    from apibank.generate import TransformersBackend

    engine = TransformersBackend(str(tiny_model), dtype="float32", device="cpu", chat_template=str(UNREAD))
    with pytest.raises(AgentSetupError, match=r"<<call>>ProbeToolA1\|.*, or --tool-format text$"):
        ModelDriver(engine, tool_format="auto")
    assert ModelDriver(engine, tool_format="text").tool_format == "text"
