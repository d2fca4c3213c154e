"""The endpoint client against a misbehaving server (:mod:`support.faulty_endpoint`): what is retried,
what is not, the whole-answer deadline, what a record keeps. Verdicts count requests and retry lines,
never time; only a server that never completes its answer meets a (small) deadline."""

from __future__ import annotations

import json
import re
import sys
import threading
from pathlib import Path

import pytest

from apibank.generate import DecodingSettings, OpenAIBackend, build_conversation, generate_predictions
from apibank.generate.backends import EndpointError
from apibank.generate.backends.http import REFUSAL_STATUS, RETRY_STATUS, say
from apibank.generate.runner import MAX_STORED_CHARS
from apibank.judge.categories import INVALID_TOOL_ARGUMENTS, MAX_PREDICTION_CHARS, PREDICTION_TOO_LONG
from apibank.judge.scoring import score
from apibank.pipeline import load_rows
from support.faulty_endpoint import FaultyEndpoint

SETTINGS = DecodingSettings(max_new_tokens=16)
DOCS = Path(__file__).resolve().parents[2] / "docs" / "backends.md"


@pytest.fixture(scope="module")
def rows(data_dir):
    return load_rows(["level-1"], data_dir, limit=2)


def backend_for(server, said=None, **options) -> OpenAIBackend:
    options = {"backoff": 0.0, "max_retries": 5, "concurrency": 1, **options}
    return OpenAIBackend("m", base_url=server.base_url, api_key="k", log=(said.append if said is not None else None),
                         **options)


def one(backend, row, fmt="chat"):
    conversation = build_conversation(row, fmt)
    (completion,) = backend.generate([conversation], [backend.render(conversation)], SETTINGS)
    return completion


@pytest.mark.parametrize("fault", ["reset", "close", "bad-status", "cut-chunked", "cut-length"])
def test_a_transport_fault_is_retried(rows, fault):
    said: list[str] = []
    with FaultyEndpoint([fault]) as server:
        completion = one(backend_for(server, said), rows[0])
        assert len(server.requests) == 2
    assert completion.text == "API-Request: [GetToday()]"
    assert len(said) == 1 and "retry 1/5" in said[0]


@pytest.mark.parametrize("fault", ["close", "reset"])
def test_a_kept_alive_connection_the_server_closed_is_resent_at_once(rows, fault):
    """The second request goes out on the first one's kept-alive connection, which the server closes (or
    resets) without answering: sent again at once, no backoff, no retry counted."""
    said: list[str] = []
    with FaultyEndpoint(["ok", fault]) as server:
        backend = backend_for(server, said, max_retries=0)
        one(backend, rows[0])
        assert one(backend, rows[1]).text == "API-Request: [GetToday()]"
        assert len(server.requests) == 3
    assert said == []


def test_a_resend_happens_once_and_within_the_attempts_deadline(rows):
    said: list[str] = []
    with FaultyEndpoint(["ok", "close", "close"]) as server:  # the resend, on a new connection, fails too
        backend = backend_for(server, said)
        one(backend, rows[0])
        one(backend, rows[1])
        assert len(server.requests) == 4
    assert len(said) == 1 and "retry 1/5" in said[0]
    with FaultyEndpoint(["ok", "close", "hang"]) as server:
        backend = backend_for(server, said, timeout=0.3, max_retries=0)
        one(backend, rows[0])
        with pytest.raises(EndpointError, match=r"no complete answer within --request-timeout 0.3 s"):
            one(backend, rows[1])
        assert len(server.requests) == 3
    assert len(said) == 1


@pytest.mark.parametrize("status", sorted(RETRY_STATUS))
def test_each_retried_status_is_retried(rows, status):
    said: list[str] = []
    with FaultyEndpoint([str(status)]) as server:
        one(backend_for(server, said), rows[0])
        assert len(server.requests) == 2
    assert len(said) == 1 and f"HTTP {status}" in said[0]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 405, 413, 422, 501])
def test_any_other_status_fails_at_once(rows, status):
    said: list[str] = []
    with FaultyEndpoint([f"{status}:no such thing"]) as server:
        with pytest.raises(EndpointError, match=f"HTTP {status}: no such thing"):
            one(backend_for(server, said), rows[0])
        assert len(server.requests) == 1
    assert said == []


def test_the_docs_name_exactly_the_retried_statuses():
    line = next(line for line in DOCS.read_text("utf-8").splitlines() if line.startswith("Retried statuses:"))
    assert {int(code) for code in re.findall(r"\b\d{3}\b", line)} == RETRY_STATUS
    assert all(f"`{status}`" in DOCS.read_text("utf-8") for status in REFUSAL_STATUS)


def test_identical_500s_are_retried_never_taken_for_a_refusal(rows):
    """Three identical 500s naming a template error: retried within the budget, the conversation sent as
    it was each time, no adaptation recorded."""
    text = "500:jinja2.exceptions.TemplateError: Conversation roles must alternate user/assistant"
    with FaultyEndpoint([text] * 3) as server:
        backend = backend_for(server)
        records = generate_predictions(rows[:1], backend, fmt="chat", settings=SETTINGS, progress=False)
        assert len(server.requests) == 4
        assert all(request["messages"] == server.requests[0]["messages"] for request in server.requests)
    assert backend.template_info()["template_adaptations"] == []
    assert "template_adaptations" not in records[0]
    assert json.loads(records[0]["prompt"])["messages"] == server.requests[-1]["messages"]


def test_500s_until_the_retries_end_fail_with_the_servers_message(rows):
    with FaultyEndpoint(then="500:Internal error: template broke") as server:
        with pytest.raises(EndpointError, match="HTTP 500: Internal error: template broke"):
            one(backend_for(server, max_retries=3), rows[0])
        assert len(server.requests) == 4


def test_a_refusal_adapts_and_each_record_keeps_the_prompt_it_was_sent_with(rows):
    """A 400 naming a role problem: the conversation is adapted; every row's recorded prompt is the body
    the server accepted, and the adaptations are recorded with it."""
    def refuses_system(body):
        return any(message["role"] == "system" for message in body["messages"])

    with FaultyEndpoint() as server:
        server.play_ok = server.play

        def play(handler, step, body):
            if refuses_system(body):
                step = "400:System role not supported"
            server.play_ok(handler, step, body)

        server.play = play
        backend = backend_for(server)
        conversations = [build_conversation(row, "chat") for row in rows]
        prompts = [backend.render(c) for c in conversations]  # rendered before the server refused anything
        assert all(any(m["role"] == "system" for m in json.loads(p)["messages"]) for p in prompts)
        records = generate_predictions(rows, backend, fmt="chat", settings=SETTINGS, progress=False)
        accepted = [request["messages"] for request in server.requests if not refuses_system(request)]
    assert len(accepted) == len(rows)
    for record in records:
        assert json.loads(record["prompt"])["messages"] in accepted
        assert record["template_adaptations"] == ["system-in-first-user"]


def test_an_adaptation_learnt_on_one_shape_applies_to_that_shape_only(data_dir):
    """A server without a tool role: rows with tool results are adapted, once per shape (as a chat
    template's are, :func:`~apibank.generate.templates.shape_of`); a row without one goes out as it is."""
    from apibank.generate.templates import shape_of

    def has_tool(conversation):
        return any(message["role"] == "tool" for message in conversation.messages)

    conversations = [build_conversation(row, "chat") for row in load_rows(["level-1"], data_dir)]
    shapes: dict[tuple, list] = {}
    for conversation in conversations:
        shapes.setdefault(shape_of(conversation.messages, conversation.tools), []).append(conversation)
    first, again = next(group for group in shapes.values() if len(group) > 1 and has_tool(group[0]))[:2]
    plain = next(group[0] for group in shapes.values() if not has_tool(group[0]))
    with FaultyEndpoint() as server:
        server.play_ok = server.play

        def play(handler, step, body):
            if any(message["role"] == "tool" for message in body["messages"]):
                step = "400:tool role not supported"
            server.play_ok(handler, step, body)

        server.play = play
        backend = backend_for(server)
        for conversation in (first, plain, again):
            backend.generate([conversation], [backend.render(conversation)], SETTINGS)
            if conversation is first:
                refused = len(server.requests) - 1
        sent = [request["messages"] for request in server.requests]
    assert refused >= 1 and len(sent) == refused + 3  # the same shape again: sent adapted at once
    assert sent[refused + 1] == backend.wire_messages(plain.messages)  # the other shape: as it is
    assert sent[refused + 2] != backend.wire_messages(again.messages)
    assert "tool-results-as-user" in [a["name"] for a in backend.template_info()["template_adaptations"]]


def test_a_trickling_answer_is_bounded_by_the_request_timeout(rows):
    """One byte every 50 ms, never complete: each attempt ends at its deadline, the request fails."""
    said: list[str] = []
    with FaultyEndpoint(then="trickle") as server:
        with pytest.raises(EndpointError, match=r"no complete answer within --request-timeout 0.3 s"):
            one(backend_for(server, said, timeout=0.3, max_retries=1), rows[0])
        assert len(server.requests) == 2
    assert len(said) == 1


def test_retry_lines_of_parallel_requests_are_whole_lines(monkeypatch):
    """Each line reaches stderr in one write (print writes the text and its newline apart)."""
    writes: list[str] = []

    class Stream:
        def write(self, text):
            writes.append(text)

        def flush(self):
            pass

    monkeypatch.setattr(sys, "stderr", Stream())
    threads = [threading.Thread(target=say, args=(f"apibank: request {i}; retry 1/5 in 1.0 s",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(writes) == 8 and all(text.endswith("\n") and text.count("\n") == 1 for text in writes)


def test_a_huge_answer_is_stored_cut_and_flagged_and_judged_as_the_whole(rows, tmp_path, data_dir):
    output = tmp_path / "predictions.jsonl"
    with FaultyEndpoint(then="huge") as server:
        server.huge_chars = 10 * MAX_STORED_CHARS
        records = generate_predictions(rows, backend_for(server), fmt="chat", settings=SETTINGS,
                                       output_path=output, progress=False)
    assert MAX_STORED_CHARS > MAX_PREDICTION_CHARS  # a cut answer is still too long to judge: same verdict
    for record in records:
        assert record["truncated"] is True
        assert len(record["prediction"]) == MAX_STORED_CHARS and len(record["raw_output"]) == MAX_STORED_CHARS
    assert output.stat().st_size < len(rows) * 3 * MAX_STORED_CHARS
    result = score([r["prediction"] for r in records], [row["reference"] for row in rows], data_dir=data_dir,
                   return_details=True)
    assert {d["category"] for d in result["details"] if d["verdict"] is not None} == {PREDICTION_TOO_LONG}


@pytest.mark.parametrize("written", ['{"token": "a", ', "[1, 2]", "user_name='John'"])
def test_tool_call_arguments_that_are_not_a_json_object_are_kept_and_judged_wrong(data_dir, written):
    """The call is kept with its arguments as written, and both protocols judge it wrong under its own
    category (it was an empty prediction)."""
    row = next(row for row in load_rows(["level-1"], data_dir) if row["kind"] == "api")

    def message(body):
        name = body["tools"][0]["function"]["name"]
        return {"role": "assistant", "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": name, "arguments": written}}]}

    with FaultyEndpoint(message=message) as server:
        (record,) = generate_predictions([row], backend_for(server), fmt="tools", settings=SETTINGS,
                                         progress=False)
    assert record["prediction"] != ""
    assert record["tool_call"]["arguments_text"] == written and record["tool_call"]["error"]
    result = score([record["prediction"]], [row["reference"]], data_dir=data_dir, return_details=True)
    assert [d["category"] for d in result["details"]] == [INVALID_TOOL_ARGUMENTS, INVALID_TOOL_ARGUMENTS]
    assert all(d["verdict"] is False for d in result["details"])
