"""ROUGE-L: known test vectors and a differential test against the ``rouge`` 1.0.1 package."""

from __future__ import annotations

import json
import random

import pytest

from apibank.judge.rouge import (
    EmptyText,
    lcs_length,
    needs_deep_recursion,
    rouge_l,
    rouge_score_l,
)

VECTORS = [
    ("the cat sat", "the cat sat", 0.999999995),
    ("b a", "a b. a", 0.999999995),
    ("Hello. ", "Hello", 0.6666666622222223),
    ("Hello.", "Hello", 0.999999995),
    ("Hello.\n", "Hello", 0.6666666622222223),
    ("The cat sat on the mat", "the cat sat on the mat", 0.9090909041322315),
    ("a b c", "c b a", 0.3333333283333334),
    ("x. . y", "x y", 0.7999999952000001),
    ("Hello, world", "hello world", 0.4999999950000001),
    ("a a a", "a", 0.999999995),
    ("It costs 3.5 dollars", "It costs 3.5 dollars", 0.999999995),
    ("   ", "x", 0.0),
    (" . ", "x", 0.0),
]


@pytest.mark.parametrize("hypothesis, reference, expected", VECTORS)
def test_spec_vectors(hypothesis, reference, expected):
    assert rouge_l(hypothesis, reference) == expected


@pytest.mark.parametrize("hypothesis, reference, message", [("", "x", "Hypothesis"), (".", "x", "Hypothesis"), ("...", "x", "Hypothesis"), ("x", "", "Reference")])
def test_empty_texts_raise_like_the_package(hypothesis, reference, message):
    with pytest.raises(EmptyText, match=message):
        rouge_l(hypothesis, reference)


def _references(data_dir) -> list[str]:
    texts = []
    for name in ("level-1-response.json", "level-2-response.json", "level-3-batch-inf-response.json"):
        records = json.loads((data_dir / "test-data" / name).read_text("utf-8"))
        texts.extend(record["expected_output"] if "expected_output" in record else record["output"] for record in records)
    return texts


def _variants(rng: random.Random, reference: str, other: str) -> list[str]:
    words = reference.split()
    shuffled = words[:]
    rng.shuffle(shuffled)
    dropped = [w for w in words if rng.random() > 0.3]
    return [
        reference,
        " ".join(shuffled),
        reference.lower(),
        " ".join(words[: len(words) // 3]),
        reference + " . extra. ",
        "  ".join(words[::2]),
        " ".join(dropped),
        other,
        "".join(rng.choice(" .,!?;:") for _ in range(rng.randint(1, 6))),  # punctuation only
        " ".join(rng.choice(words + ["the", ".", "a."]) for _ in range(rng.randint(1, 40))),
    ]


def test_differential_against_the_rouge_package(data_dir):
    from rouge import Rouge

    package = Rouge()
    rng = random.Random(20230417)
    references = _references(data_dir)
    pairs = []
    for reference in references:
        pairs.extend((h, reference) for h in _variants(rng, reference, rng.choice(references)))
    pairs += [("", "x"), (" ", "x"), ("...", "y"), (". . .", "a b"), ("!!!", "a"), ("x", "")]
    assert len(pairs) >= 1000
    agreed = 0
    worst = 0.0
    for hypothesis, reference in pairs:
        try:
            expected = package.get_scores(hypothesis, reference)[0]["rouge-l"]["f"]
        except ValueError as error:
            with pytest.raises(EmptyText) as raised:
                rouge_l(hypothesis, reference)
            assert str(raised.value) == str(error)
            agreed += 1
            continue
        got = rouge_l(hypothesis, reference)
        worst = max(worst, abs(got - expected))
        assert got == pytest.approx(expected, abs=1e-9), (hypothesis, reference)
        agreed += 1
    assert agreed == len(pairs)
    print(f"rouge differential: {len(pairs)} pairs, max abs diff {worst}")


def test_long_sentences_have_no_recursion_limit():
    hypothesis = " ".join(f"w{i % 50}" for i in range(3000))
    reference = " ".join(f"w{i}" for i in range(50))
    assert 0.0 < rouge_l(hypothesis, reference) < 1.0
    assert needs_deep_recursion(hypothesis)
    assert not needs_deep_recursion(reference)


def test_rouge_score_beside_matches_the_rouge_score_package(data_dir):
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    rng = random.Random(7)
    references = _references(data_dir)
    pairs = [(h, r) for r in references[::3] for h in _variants(rng, r, rng.choice(references))]
    pairs += [("", "the cat"), ("...", "x"), ("The cat sat", "the cat sat"), ("İstanbul ÉTÉ naïve x2", "istanbul été naive X2")]
    for hypothesis, reference in pairs:
        assert rouge_score_l(hypothesis, reference) == scorer.score(reference, hypothesis)["rougeL"].fmeasure


def test_bit_parallel_lcs_length():
    rng = random.Random(3)
    for _ in range(300):
        a = [rng.choice("abcd") for _ in range(rng.randint(0, 12))]
        b = [rng.choice("abcd") for _ in range(rng.randint(0, 12))]
        table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i in range(len(a)):
            for j in range(len(b)):
                table[i + 1][j + 1] = table[i][j] + 1 if a[i] == b[j] else max(table[i][j + 1], table[i + 1][j])
        assert lcs_length(a, b) == table[-1][-1]
