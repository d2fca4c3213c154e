"""Stops on the generated text only, per-row token budgets from the gold answers, the greedy decoder against
transformers' own ``generate``, usage records and totals, and ``apibank score`` keeping an evaluate run's
metadata. Tiny random model; the real model's side of the same behaviour is in test_real_model.py."""

from __future__ import annotations

import json

import pytest

import apibank_cli
from apibank.generate import DecodingSettings, build_conversation, generate_predictions
from apibank.generate.backends import Backend, Completion
from apibank.generate.decoders.decoding import GreedyDecoder, hand_loop
from apibank.generate.runner import generation_order, sized_settings, token_budgets
from apibank.generate.stops import LINE_STOPS, PAPER_STOPS, answer_text, cut_at_stop, first_stop, stops_for
from apibank.pipeline import load_rows, parse_price, usage_totals


@pytest.fixture(scope="module")
def level_rows(data_dir):
    return load_rows(None, data_dir)


# ------------------------------------------------------------------------------------ stop rule
def test_stop_across_the_prompt_boundary_does_not_cut_the_answer(level_rows):
    """The issue's case: the paper prompt ends with a newline and the model answers ``AI: ...``. Matched
    over prompt + answer, ``\\nAI:`` sits on the boundary; matched over the answer alone, it does not."""
    row = next(r for r in level_rows if r["kind"] == "response" and r["level"] == 1)
    prompt = build_conversation(row, "paper").plain_text
    assert prompt.endswith("\n")
    answer = "AI: Sure, your meeting is booked.\nUser: thanks\nAI: you're welcome"
    assert first_stop(prompt + answer, PAPER_STOPS) is not None  # what transformers' stop_strings saw
    assert cut_at_stop(answer, PAPER_STOPS) == "AI: Sure, your meeting is booked."


@pytest.mark.parametrize(
    "text, expected",
    [
        ("API-Request: [GetToday()]\nAI: done", "API-Request: [GetToday()]"),
        ("\nAI: hello\nUser: hi", "\nAI: hello"),  # a stop inside the leading whitespace is the answer's label
        ("  \n\nAPI: x", "  \n\nAPI: x"),
        ("no stop at all", "no stop at all"),
        ("a\nUser: b\nAI: c", "a"),  # the first stop wins, whichever string it is
        ("", ""),
    ],
)
def test_stop_rule(text, expected):
    assert cut_at_stop(text, PAPER_STOPS) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("API-Request: [GetToday()]\n\nAPI descriptions:", "API-Request: [GetToday()]"),
        ("AI: Sure.\nUser: thanks", "AI: Sure."),
        ("AI:\nSure.\nUser: thanks", "AI:\nSure."),  # never cut to a bare turn label
        ("\n\nAI: Sure.\n", "\n\nAI: Sure."),
        ("User: User's utterance\n\nExpected output:", "User: User's utterance"),
        ("API-Request: [ToolSearcher(keywords='QueryMeeting')]->{'api_name': 'ToolSearcher'",
         "API-Request: [ToolSearcher(keywords='QueryMeeting')]"),
    ],
)
def test_line_stop_of_plain_text_paper_prompts(text, expected):
    """No gold answer of any level spans two lines; a plain-text transcript ends an answer at its line's end."""
    assert cut_at_stop(text, LINE_STOPS) == expected


class _ScriptedBackend(Backend):
    """Answers every row with one text; renders the paper prompt as plain text or wrapped (as a chat template would)."""

    name = "scripted"

    def __init__(self, answer: str, plain: bool) -> None:
        self.answer, self.plain = answer, plain

    def render(self, conversation):
        return conversation.plain_text if self.plain else "<turn>" + (conversation.plain_text or "") + "<end>"

    def generate(self, conversations, prompts, settings):
        return [Completion(text=self.answer, raw=self.answer) for _ in conversations]

    def info(self):
        return {"backend": self.name, "model_id": "scripted"}


@pytest.mark.parametrize("plain", [True, False])
def test_the_three_callers_cut_answers_with_the_one_stop_rule(level_rows, plain):
    """``apibank evaluate``'s runner, ``apibank_generate.generate`` and the inspect-ai task cut one answer
    the same way: the stops of the prompt format (the line's end for a plain-text paper prompt, the next
    turn's label inside a template), searched after the answer's opening label."""
    import apibank_generate
    from apibank.evals.classic import prediction_text

    answer = "AI: Sure -> done\nUser: more\nAI: again"
    rows = [r for r in level_rows if r["level"] == 1][:3]
    backend = _ScriptedBackend(answer, plain)
    stops = stops_for(backend, rows, "paper")
    assert stops == (LINE_STOPS if plain else PAPER_STOPS)
    expected = "AI: Sure" if plain else "AI: Sure -> done"
    assert answer_text(answer, stops) == expected
    assert apibank_generate.generate(backend, rows, fmt="paper") == [expected] * 3
    records = generate_predictions(rows, backend, fmt="paper", progress=False)
    assert [record["prediction"] for record in records] == [expected] * 3
    if not plain:  # inspect-ai sends the paper prompt as a user turn, through the model's template
        assert prediction_text(answer) == expected


def test_the_stop_strings_are_declared_once():
    """The stop strings and the cutting rule live in ``apibank.generate.stops`` only."""
    from pathlib import Path

    import apibank

    package = Path(apibank.__file__).parent
    sources = [*package.rglob("*.py"), package.parent / "apibank_generate.py"]
    declaring = sorted(str(path.relative_to(package.parent)) for path in sources
                       if '"\\nGenerate API Request"' in path.read_text(encoding="utf-8")
                       or "def first_stop" in path.read_text(encoding="utf-8"))
    assert declaring == ["apibank/generate/stops.py"]


def test_decoder_stops_each_row_on_its_generated_text(tiny_backend, level_rows):
    """Stop strings seen only in the generated ids: the decoder asks after every token, the row ends at once,
    and the other rows of the batch go on."""
    rows = [r for r in level_rows if r["level"] == 1][:3]
    prompts = [tiny_backend.tokenizer(build_conversation(r, "paper").plain_text)["input_ids"] for r in rows]
    decoder = GreedyDecoder(tiny_backend.model, eos_ids=[], reuse_prefix=False)
    asked = []

    def stop_second_row_at_three(row, ids):
        asked.append((row, len(ids)))
        return row == 1 and len(ids) == 3

    out = decoder.generate(prompts, [5, 5, 5], stop_second_row_at_three)
    assert [len(o.ids) for o in out] == [5, 3, 5]
    assert [o.finish_reason for o in out] == ["length", "stop", "length"]
    assert (1, 4) not in asked and (0, 5) in asked


def test_sampling_is_seeded_per_row(tiny_backend, level_rows):
    """With a temperature, each row samples with its own generator: the same seed gives the same answers,
    whichever rows share the batch; greedy settings record exactly what they recorded before."""
    rows = [r for r in level_rows if r["level"] == 1][:3]
    conversations = [build_conversation(r, "paper") for r in rows]
    prompts = [tiny_backend.render(c) for c in conversations]
    sampled = DecodingSettings(max_new_tokens=8, temperature=1.0, seed=7)
    batch = [c.raw for c in tiny_backend.generate(conversations, prompts, sampled)]
    assert [c.raw for c in tiny_backend.generate(conversations, prompts, sampled)] == batch
    assert [c.raw for c in tiny_backend.generate(conversations[2:], prompts[2:], sampled)] == batch[2:]
    greedy = DecodingSettings(max_new_tokens=8)
    assert [c.raw for c in tiny_backend.generate(conversations, prompts, greedy)] != batch  # it does sample
    assert greedy.as_dict() == {"do_sample": False, "temperature": 0.0, "max_new_tokens": 8, "stop": []}
    assert sampled.as_dict()["do_sample"] and sampled.as_dict()["seed"] == 7
    with pytest.raises(ValueError, match="temperature must be 0"):
        DecodingSettings(temperature=-1)


# ------------------------------------------------------------------------------------- budgets
def test_budgets_sized_from_gold_answers(tiny_backend, level_rows):
    budgets = dict(token_budgets(tiny_backend, level_rows))
    assert set(budgets) == {f"level-{n}/{k}" for n in (1, 2, 3) for k in ("api", "response")}
    for key, value in budgets.items():
        level, kind = key.split("/")
        golds = [r["expected_output"] for r in level_rows if f"level-{r['level']}" == level and r["kind"] == kind]
        assert value == max(tiny_backend.token_counts(golds)) + 16
    settings = sized_settings(tiny_backend, level_rows, "paper")  # plain-text paper prompts: one line per turn
    assert settings.stop == LINE_STOPS and settings.max_new_tokens == max(budgets.values())
    assert settings.max_tokens_for(1, "api") == budgets["level-1/api"]
    capped = sized_settings(tiny_backend, level_rows, "paper", max_new_tokens=7)
    assert capped.max_tokens_for(3, "response") == 7
    assert capped.as_dict()["max_new_tokens_by_kind"] == {key: 7 for key in budgets}


def test_each_row_gets_its_own_budget(tiny_backend, level_rows):
    rows = [r for r in level_rows if r["level"] == 1][:4]
    settings = DecodingSettings(max_new_tokens=9, budgets=(("level-1/api", 3), ("level-1/response", 9)))
    records = generate_predictions(rows, tiny_backend, fmt="paper", settings=settings, batch_size=4, progress=False)
    for record in records:
        assert record["generated_tokens"] <= (3 if record["kind"] == "api" else 9)
        assert record["prompt_tokens"] > 100 and record["seconds"] >= 0


# ------------------------------------------------------------------------------------- decoder
def test_decoder_equals_transformers_generate_with_prefix_reuse(tiny_backend, level_rows):
    """Rows of one dialogue in generation order share prompt prefixes; the decoder's output (batched, with the
    cache of the shared prefix reused) equals transformers' greedy ``generate`` row by row, and the hand loop's."""
    import torch

    rows = [r for r in level_rows if r["id"].startswith("level-1/AddAgenda-AddAlarm-GetUserToken-level-2-1#")]
    conversations = [build_conversation(r, "paper") for r in rows]
    prompts = [c.plain_text for c in conversations]
    order = generation_order(conversations, prompts)
    ids = [tiny_backend.tokenizer(prompts[i])["input_ids"] for i in order]
    decoder = GreedyDecoder(tiny_backend.model, eos_ids=[])
    out = decoder.generate(ids, [6] * len(ids))
    assert sum(o.reused_prompt_tokens for o in out) > 300  # the dialogue's shared history
    expected = []
    with torch.inference_mode():
        for prompt in ids:
            generated = tiny_backend.model.generate(torch.tensor([prompt]), max_new_tokens=6, do_sample=False,
                                                    eos_token_id=None, pad_token_id=tiny_backend.tokenizer.pad_token_id)
            expected.append(generated[0, len(prompt):].tolist())
    assert [o.ids for o in out] == expected
    assert hand_loop(tiny_backend.model, ids, 6, tiny_backend.tokenizer.pad_token_id) == expected


# --------------------------------------------------------------------------------------- usage
def test_usage_totals_and_price():
    records = [{"prompt_tokens": 1000, "generated_tokens": 10, "seconds": 2.0},
               {"prompt_tokens": 3000, "generated_tokens": 30, "seconds": 2.0}]
    usage = usage_totals(records, price_per_mtok=parse_price("0.5,2"), wall_seconds=4.5)
    assert usage["prompt_tokens"] == 4000 and usage["generated_tokens"] == 40 and usage["seconds"] == 4.0
    assert usage["samples_per_second"] == 0.5 and usage["generated_tokens_per_second"] == 10.0
    assert usage["cost"] == pytest.approx(4000 / 1e6 * 0.5 + 40 / 1e6 * 2)
    unknown = usage_totals([{"prompt_tokens": None, "generated_tokens": None, "seconds": 1.0}])
    assert unknown["prompt_tokens"] is None and unknown["samples_with_token_counts"] == 0
    for bad in ("1", "a,b", "1,2,3", "-1,2"):
        with pytest.raises(ValueError, match="price-per-mtok"):
            parse_price(bad)


def test_score_keeps_the_evaluate_runs_metadata(tiny_backend, data_dir, tmp_path, capsys):
    model = str(tiny_backend.model_id)
    out = tmp_path / "run"
    argv = ["evaluate", "--model", model, "--format", "paper", "--levels", "1", "--limit", "1",
            "--max-new-tokens", "3", "--batch-size", "2", "--dtype", "float32", "--device", "cpu",
            "--chat-template", "off", "--price-per-mtok", "0.1,0.4", "--data-dir", str(data_dir),
            "--output", str(out), "--quiet"]
    assert apibank_cli.main(argv) == 0
    assert "usage: 2 samples" in capsys.readouterr().out
    run = json.loads((out / "results.json").read_text())
    usage = run["usage"]
    assert usage["samples"] == 2 and usage["prompt_tokens"] > 0 and 0 < usage["generated_tokens"] <= 6
    assert usage["seconds"] > 0 and usage["cost"] > 0 and usage["price_per_mtok"] == {"prompt": 0.1, "generated": 0.4}
    assert run["versions"]["transformers"] and run["versions"]["torch"] and "vllm" in run["versions"]
    assert run["subset"] is True and run["limit"] == 1
    assert run["decoding"]["max_new_tokens"] == 3 and set(run["decoding"]["max_new_tokens_by_kind"]) == {
        "level-1/api", "level-1/response"}
    for line in (out / "predictions.jsonl").read_text().splitlines():
        record = json.loads(line)
        assert {"prompt_tokens", "generated_tokens", "seconds"} <= set(record)
    report = (out / "report.md").read_text()
    assert "## Usage" in report and "generated tokens" in report

    assert apibank_cli.main(["score", str(out / "predictions.jsonl"), "--data-dir", str(data_dir), "--overwrite"]) == 0
    printed = capsys.readouterr().out
    again = json.loads((out / "results.json").read_text())
    for key in ("limit", "batch_size", "decoding", "format", "subset"):
        assert again[key] == run[key], key
    for key in ("backend", "dtype", "revision", "device"):
        assert again["model"][key] == run["model"][key], key
    assert again["scores"] == run["scores"]
    assert again["usage"]["generated_tokens"] == usage["generated_tokens"] and again["usage"]["cost"] == usage["cost"]
    assert "(subset: --limit 1)" in printed
