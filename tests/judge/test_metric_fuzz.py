"""Hostile predictions: every one of >= 10,000 generated and mutated outputs gets a verdict, nothing escapes."""

from __future__ import annotations

import random

import pytest
from apibank_tools.registry import LEVEL_1_2, LEVEL_3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apibank.data.rows import iter_rows
from apibank.judge.retriever import CachedRetriever
from apibank.judge.scoring import score

BATCH = 100
EXAMPLES = 100
SEEN: dict = {"predictions": 0, "categories": {}}


@pytest.fixture(scope="module")
def pool(data_dir):
    rng = random.Random(5)
    rows = [row for config in ("level-1", "level-2", "level-3") for row in iter_rows(config, data_dir)]
    api = [r for r in rows if r["kind"] == "api"]
    responses = [r for r in rows if r["kind"] == "response"]
    return rng.sample(api, 150) + rng.sample(responses, 30)


TOOL_NAMES = sorted(set(LEVEL_1_2.names()) | set(LEVEL_3.names()))
PARAMETERS = sorted(
    {p for ts in (LEVEL_1_2, LEVEL_3) for n in ts.names() for p in ts.get(n).input_parameters}
)

literals = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
raw_values = st.one_of(
    literals.map(repr),
    st.text(max_size=30).map(lambda t: f"'{t}'"),
    st.text(max_size=30).map(lambda t: f'"{t}"'),
    st.sampled_from(["'['a', 'b']'", "it's", "\"x', b='y\"", "''", "1.5e3", "-33.86", "2023-03-20",
                     "9" * 5000, "'" + "a" * 20000 + "'", "[{'x': [[[1]]]}]", "True", "true", "None",
                     "__import__('os').system('true')", "(1+2)*3", "'²'", "'١٢'"]),
)
calls = st.builds(
    lambda name, pairs, prefix, suffix: f"{prefix}[{name}({', '.join(f'{k}={v}' for k, v in pairs)})]{suffix}",
    st.sampled_from(TOOL_NAMES) | st.text(min_size=1, max_size=12),
    st.lists(st.tuples(st.sampled_from(PARAMETERS) | st.text(max_size=8), raw_values), max_size=5),
    st.sampled_from(["", "API-Request: ", "AI: ", "Sure!\n", "[note] "]),
    st.sampled_from(["", "\n", " and then [Calculator(formula='1+2')]", ")]", "\n[GetToday()]", "'"]),
)


def _mutate(text: str, how: int, position: int) -> str:
    cut = position % (len(text) + 1)
    return [
        text[:cut],
        text[:cut] + "'\"" + text[cut:],
        text + " " + text,
        text.replace("'", '"'),
        text.replace("(", "(x=1, ", 1),
        text[:cut] + "\n" + text[cut:],
        text.replace("]", "", 1),
        text.upper(),
        text * 3,
        text[:cut] + "日本語😀\u200b" + text[cut:],
    ][how % 10]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_every_hostile_prediction_gets_a_verdict(pool, data_dir, data):
    retriever = test_every_hostile_prediction_gets_a_verdict.retriever
    picks = data.draw(st.lists(st.integers(0, len(pool) - 1), min_size=BATCH, max_size=BATCH))
    predictions = []
    for index in picks:
        kind = data.draw(st.integers(0, 3))
        if kind == 0:
            predictions.append(data.draw(calls))
        elif kind == 1:
            predictions.append(data.draw(st.text(max_size=200)))
        else:
            gold = pool[index]["expected_output"]
            predictions.append(_mutate(gold, data.draw(st.integers(0, 9)), data.draw(st.integers(0, 10_000))))
    references = [pool[i]["reference"] for i in picks]
    result = score(predictions, references, return_details=True, data_dir=data_dir, retriever=retriever, timeout=0.5)
    SEEN["predictions"] += len(predictions)
    assert len(result["details"]) == 2 * len(predictions)
    for record in result["details"]:
        key = (record["protocol"], record["category"])
        SEEN["categories"][key] = SEEN["categories"].get(key, 0) + 1
        if record["kind"] == "api":
            assert isinstance(record["verdict"], bool)
            assert record["verdict"] or record["category"], record
        else:
            assert 0.0 <= record["score"] <= 1.0
    for protocol in ("paper", "corrected"):
        overall = result[protocol]["overall"]["api"]
        assert overall["total"] == sum(pool[i]["kind"] == "api" for i in picks)


test_every_hostile_prediction_gets_a_verdict.retriever = CachedRetriever()


def test_fuzz_volume():
    """Runs after the fuzz test (file order): at least 10,000 predictions were judged."""
    assert SEEN["predictions"] >= 10_000
    print(f"fuzz: {SEEN['predictions']} predictions; verdict categories: {sorted(SEEN['categories'].items(), key=str)}")
