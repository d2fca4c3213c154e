"""The OpenAI-compatible backend against a local server on 127.0.0.1 that validates requests
strictly: every tool message needs a ``tool_call_id``, and the model's chat template (strict
user/assistant alternation, no system or tool role) is applied server-side, its refusals answered
as HTTP 400 naming the problem (as vLLM and TGI do). Replies come back the way llama-cpp-python's
function calling writes them (``functions.NAME:`` + HTML-escaped JSON) with a ``usage`` object.
Also: errors that cannot succeed on retry, Retry-After, the retry budget, the request timeout, and
Ctrl-C keeping every completed response. Server faults: ``test_endpoint_faults.py``."""

from __future__ import annotations

import _thread
import html
import json
import threading
import time

import jinja2
import pytest

from apibank.generate import (
    DecodingSettings,
    OpenAIBackend,
    build_conversation,
    chat_conversation,
    generate_predictions,
)
from apibank.generate.backends import EndpointError
from apibank.generate.backends.http import MAX_RETRY_AFTER, retry_after as _retry_after
from apibank.generate.predictions import read_predictions
from apibank.pipeline import load_rows
from support.local_endpoint import ChatCompletions, LocalEndpoint, QuietHandler, send_json
from support.paths import TEMPLATES_DIR as TEMPLATES

TEMPLATE = (TEMPLATES / "strict_alternation.jinja").read_text()
SETTINGS = DecodingSettings(max_new_tokens=16)


def _raise(message):
    raise jinja2.TemplateError(message)


class StrictServer(LocalEndpoint):
    """``POST /v1/chat/completions``; ``mode`` picks a failure to play instead of answering."""

    def __init__(self, mode: str = "ok", slow_after: int | None = None):
        self.mode, self.slow_after = mode, slow_after
        self.requests: list[dict] = []
        self.hangs_over = 0  # hanging requests that have ended
        self.release = threading.Event()  # ends every hanging request at once
        self.lock = threading.Lock()
        env = jinja2.Environment()
        env.globals["raise_exception"] = _raise
        self.template = env.from_string(TEMPLATE)
        server = self

        class Handler(QuietHandler):
            def do_POST(self):
                body = self.json_body()
                with server.lock:
                    server.requests.append(body)
                    number = len(server.requests)
                status, payload, headers = server.answer(body, number)
                if status is None:
                    server.release.wait(payload)
                    with server.lock:
                        server.hangs_over += 1
                    return
                try:
                    send_json(self, payload, status, headers)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.listen(Handler)

    def validate(self, body: dict) -> str | None:
        for index, message in enumerate(body["messages"]):
            if message.get("role") == "tool" and "tool_call_id" not in message:
                return f"messages.{index}: a tool message needs a tool_call_id"
        try:
            self.template.render(messages=body["messages"], add_generation_prompt=True, bos_token="<bos>")
        except jinja2.TemplateError as error:
            return f"jinja2.exceptions.TemplateError: {error}"
        return None

    def __exit__(self, *exc) -> None:
        self.release.set()
        super().__exit__(*exc)

    def answer(self, body: dict, number: int):
        if self.mode == "busy":
            return 503, {"error": {"message": "server busy"}}, [("Retry-After", "1e9")]
        if self.mode == "unauthorised":
            return 401, {"error": {"message": "invalid api key " + "x" * 900 + " END"}}, []
        if self.mode == "hang" or (self.slow_after is not None and number > self.slow_after):
            return None, 600, []  # longer than any test waits: it ends when the server closes
        problem = self.validate(body)
        if problem:
            return 400, {"error": {"message": problem}}, []
        if body.get("tools"):
            name = body["tools"][0]["function"]["name"]
            content = f"functions.{name}:\n" + html.escape(json.dumps({"user_name": "John"}))
        else:
            content = "API-Request: [GetToday()]"
        reply = {"id": "x", "object": "chat.completion", "model": body["model"],
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                              "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": 100 + number, "completion_tokens": 7, "total_tokens": 107 + number}}
        return 200, reply, []


@pytest.fixture(scope="module")
def rows(data_dir):
    rows = load_rows(None, data_dir, limit=2)
    assert any(any(t["role"] == "API" for t in r["history"]) for r in rows)
    return rows


@pytest.mark.parametrize("fmt", ["chat", "tools"])
def test_strict_server_accepts_every_request_adapted_per_shape(rows, fmt, capsys):
    """Adaptations are learnt per shape (:func:`~apibank.generate.templates.shape_of`); a new shape, once
    refused, first tries the sets other shapes were accepted with: fewer than two refusals a shape."""
    from apibank.generate.templates import shape_of

    with StrictServer() as server:
        backend = OpenAIBackend("gemma", base_url=server.base_url, api_key="k", concurrency=1)
        records = generate_predictions(rows, backend, fmt=fmt, settings=SETTINGS, batch_size=4, progress=False)
    for request in server.requests:
        assert all("tool_call_id" in m for m in request["messages"] if m["role"] == "tool")
    accepted = [r for r in server.requests if server.validate(r) is None]
    assert len(accepted) == len(rows)  # every row answered
    refused = len(server.requests) - len(accepted)
    adaptations = [a["name"] for a in backend.template_info()["template_adaptations"]]
    shapes = {shape_of(c.messages, c.tools) for c in (build_conversation(row, fmt) for row in rows)}
    assert adaptations and len(shapes) <= refused < 2 * len(shapes)
    assert {"system-in-first-user", "tool-results-as-user", "merge-consecutive"} <= set(adaptations)
    assert all("the server refused" in a["reason"] for a in backend.template_info()["template_adaptations"])
    if fmt == "tools":
        assert {r["prediction"] for r in records} == {
            f"API-Request: [{row['tools'][0]['name']}(user_name='John')]" for row in rows}
    else:
        assert {r["prediction"] for r in records} == {"API-Request: [GetToday()]"}
    assert "retry" not in capsys.readouterr().err  # refusals are not retried


def test_a_chat_with_tools_goes_through_the_same_backend():
    """An agent's step (free messages, tool-call arguments as JSON text, tool schemas) is one
    ``generate`` call; the served call comes back parsed."""
    schema = {"type": "function", "function": {"name": "GetUserToken", "description": "a token",
                                               "parameters": {"type": "object", "properties": {}}}}
    messages = [{"role": "system", "content": "Help the user."}, {"role": "user", "content": "log me in"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "GetUserToken", "arguments": '{"a": 1}'}}]},
                {"role": "tool", "tool_call_id": "c1", "name": "GetUserToken", "content": "{}"}]
    conversation = chat_conversation(messages, [schema], conversation_id="episode-1")
    assert conversation.format == "tools"
    assert conversation.messages[2]["tool_calls"][0]["function"]["arguments"] == {"a": 1}
    with StrictServer() as server:
        backend = OpenAIBackend("gemma", base_url=server.base_url, concurrency=2)
        completions = backend.generate([conversation] * 2, [backend.render(conversation)] * 2, SETTINGS)
    assert [c.tool_calls for c in completions] == [[("GetUserToken", {"user_name": "John"})]] * 2
    sent = [r for r in server.requests if server.validate(r) is None][0]
    assert sent["tools"] == [schema]
    assert json.loads(sent["messages"][-2]["tool_calls"][0]["function"]["arguments"]) == {"a": 1}


def test_usage_and_seconds_reach_the_completion(rows):
    conversation = build_conversation(rows[0], "paper")
    with StrictServer() as server:
        backend = OpenAIBackend("gemma", base_url=server.base_url, api_key="k")
        (completion,) = backend.generate([conversation], [backend.render(conversation)], SETTINGS)
    assert completion.extra["usage"] == {"prompt_tokens": 101, "completion_tokens": 7, "total_tokens": 108}
    assert completion.extra["new_tokens"] == 7 and completion.extra["seconds"] > 0


def test_client_error_is_not_retried_and_shown_whole(rows, capsys):
    conversation = build_conversation(rows[0], "chat")
    with StrictServer("unauthorised") as server:
        backend = OpenAIBackend("gemma", base_url=server.base_url, api_key="k", backoff=0.01)
        with pytest.raises(EndpointError, match=r"HTTP 401: invalid api key x+ END$"):
            backend.generate([conversation], ["x"], SETTINGS)
        assert len(server.requests) == 1
    assert capsys.readouterr().err == ""


def test_a_refusal_no_adaptation_passes_is_not_retried_and_names_the_row(rows):
    """A template that no adaptation satisfies: the server's own message, whole, after one try per adaptation."""
    conversation = build_conversation(rows[0], "chat")
    conversation.messages.append({"role": "tool", "content": "x", "name": "T"})  # a tool turn the server rejects
    with StrictServer() as server:
        server.validate = lambda body: "Conversation roles must alternate user/assistant/user/assistant/..."
        backend = OpenAIBackend("gemma", base_url=server.base_url, api_key="k", backoff=0.01, max_retries=5)
        with pytest.raises(EndpointError, match=rf"row {conversation.row_id}: .*HTTP 400: Conversation roles must"):
            backend.generate([conversation], ["x"], SETTINGS)
        assert len(server.requests) <= 6  # the request and one per adaptation that changes it, no retries


def test_retry_after_is_capped_and_the_retry_budget_ends_the_wait(rows):
    assert _retry_after("1e9") == MAX_RETRY_AFTER
    assert _retry_after("nan") is None and _retry_after("soon") is None and _retry_after("-5") == 0.0
    assert _retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    conversation = build_conversation(rows[0], "chat")
    said: list[str] = []
    with StrictServer("busy") as server:
        backend = OpenAIBackend("gemma", base_url=server.base_url, api_key="k", max_retries=100, retry_budget=0.0,
                                log=said.append)
        started = time.perf_counter()
        with pytest.raises(EndpointError, match=r"HTTP 503 \(server busy\); gave up after 1 attempts.*retry budget"):
            backend.generate([conversation], ["x"], SETTINGS)
        assert time.perf_counter() - started < MAX_RETRY_AFTER / 2  # it did not wait for the capped Retry-After
        assert len(server.requests) == 1 and said == []


def test_request_timeout_retries_are_said_on_stderr(rows):
    conversation = build_conversation(rows[0], "chat")
    said: list[str] = []
    with StrictServer("hang") as server:
        backend = OpenAIBackend("gemma", base_url=server.base_url, api_key="k", timeout=0.3, backoff=0.01,
                                max_retries=2, log=said.append)
        with pytest.raises(EndpointError, match="no complete answer within --request-timeout 0.3 s"):
            backend.generate([conversation], ["x"], SETTINGS)
        assert len(server.requests) == 3
    assert len(said) == 2 and all("no complete answer within --request-timeout 0.3 s; retry" in line for line in said)
    assert said[0].endswith("retry 1/2 in 0.0 s")


def test_ctrl_c_saves_every_completed_response(rows, tmp_path):
    """Two requests answer, the others hang: Ctrl-C returns while they still hang, and the two answers are
    saved."""
    output = tmp_path / "predictions.jsonl"
    with StrictServer(slow_after=2) as server:
        backend = OpenAIBackend("gemma", base_url=server.base_url, api_key="k", concurrency=4)
        answered: list[threading.Thread] = []
        calls: dict[threading.Thread, int] = {}
        two_answered = threading.Event()
        one = backend._one

        def counted(*args, **kwargs):
            thread = threading.current_thread()
            calls[thread] = calls.get(thread, 0) + 1
            completion = one(*args, **kwargs)
            answered.append(thread)
            if len(answered) == 2:
                two_answered.set()
            return completion

        def queued(thread: threading.Thread) -> bool:
            """The thread's answer is in the backend's queue: the thread ended or asked for another row."""
            return not thread.is_alive() or calls[thread] > answered.count(thread)

        def interrupt():  # once both answers are queued and every request is out, however slow the machine
            if two_answered.wait(120):
                deadline = time.monotonic() + 120
                # a request may still be on its way (a kept-alive connection the server closed is retried)
                while not (all(queued(thread) for thread in list(answered)) and len(server.requests) == 4) \
                        and time.monotonic() < deadline:
                    time.sleep(0.001)
            interrupted.append(time.perf_counter())
            _thread.interrupt_main()

        interrupted: list[float] = []
        backend._one = counted
        watcher = threading.Thread(target=interrupt, daemon=True)
        watcher.start()
        with pytest.raises(KeyboardInterrupt):
            generate_predictions(rows[:4], backend, fmt="paper", settings=SETTINGS, batch_size=4,
                                 output_path=output, progress=False)
        hangs_over_at_return = server.hangs_over
        watcher.join()
    assert len(server.requests) == 4
    assert interrupted and hangs_over_at_return == 0  # it did not wait for the hanging requests
    saved = read_predictions(output)
    assert len(saved) == 2 and {r["prediction"] for r in saved} == {"API-Request: [GetToday()]"}


def test_each_request_asks_for_its_own_rows_budget(data_dir):
    """``max_tokens`` is the row's budget for its level and kind, not the run's largest."""
    from apibank.generate.runner import sized_settings

    level_rows = load_rows(["level-1", "level-3"], data_dir)
    rows = load_rows(["level-1", "level-3"], data_dir, limit=2)
    with ChatCompletions(lambda body: {"role": "assistant", "content": "API-Request: [GetToday()]"}) as server:
        backend = OpenAIBackend("gemma", base_url=server.base_url, concurrency=2)
        settings = sized_settings(backend, level_rows, "chat")
        generate_predictions(rows, backend, fmt="chat", settings=settings, batch_size=8, progress=False)
    asked = sorted(request["max_tokens"] for request in server.requests)
    expected = sorted(settings.max_tokens_for(row["level"], row["kind"]) for row in rows)
    assert asked == expected and len(set(asked)) == 4 and min(asked) < settings.max_new_tokens


def test_a_server_that_ignores_stop_and_max_tokens_cannot_change_a_prediction(data_dir, tiny_backend):
    """A server sends back text running past the stop strings and the budget: the prediction is cut where the
    transformers backend (which stops decoding at the first stop) cuts the same text."""
    import re

    from apibank.generate.stops import answer_start, first_stop

    rows = load_rows(["level-1", "level-2"], data_dir, limit=2)
    tiny = tiny_backend
    conversations = [build_conversation(row, "paper") for row in rows]
    prompts = [tiny.render(c) for c in conversations]
    texts = {prompt: completion.text for prompt, completion in
             zip(prompts, tiny.generate(conversations, prompts, DecodingSettings(max_new_tokens=40)))}
    # stop strings: in each answer, the first two letters in a row after its first two characters
    stops = tuple(sorted({re.search("[a-z]{2}", text[answer_start(text) + 2 :]).group() for text in texts.values()}))
    settings = DecodingSettings(max_new_tokens=30, stop=stops)
    cut = generate_predictions(rows, tiny, fmt="paper", settings=settings, progress=False)
    assert all(record["finish_reason"] == "stop" for record in cut)  # the decoder stopped at a stop string

    def reply(body):  # the whole 40-token answer, whatever the request's stop and max_tokens say
        return {"role": "assistant", "content": texts[body["messages"][0]["content"]]}

    with ChatCompletions(reply) as server:
        served = generate_predictions(rows, OpenAIBackend("tiny", base_url=server.base_url), fmt="paper",
                                      settings=settings, progress=False)
    assert {request["max_tokens"] for request in server.requests} == {30}
    assert all(first_stop(text, stops) is not None for text in texts.values())  # each reply runs past a stop
    assert [record["prediction"] for record in served] == [record["prediction"] for record in cut]
