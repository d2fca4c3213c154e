"""ROUGE-L as the ``rouge`` 1.0.1 package computes its ``rouge-l`` F.

Written from the behavioural description, not from the package: sentences are cut at every ``.``,
tokens are single-space pieces, precision and recall count *distinct* tokens, and the matched words
are the union over all (reference sentence, hypothesis sentence) pairs of the words of one LCS per
pair, reconstructed with ties going left. F = 2·(P·R)/(P + R + 1e-8).

The package reconstructs the LCS recursively and aborts on sentences of roughly 985+ tokens; this
walk is iterative and has no such limit (:func:`needs_deep_recursion` says when the package would
have failed). The differential test in ``tests/test_rouge.py`` compares the two.
"""

from __future__ import annotations

import re

# The package's reconstruction recurses once per walk step; CPython's default limit of 1000
# frames, minus the frames already on the stack, gives out at about this many steps.
RECURSION_STEPS = 985


class EmptyText(ValueError):
    """The package's 'Hypothesis is empty.' / 'Reference is empty.' error."""


def sentences(text: str) -> list[str]:
    """Pieces between periods, whitespace runs collapsed; empty pieces dropped, blank ones kept as ''."""
    return [" ".join(piece.split()) for piece in text.split(".") if piece]


def _lcs_words(reference: list[str], hypothesis: list[str]) -> set[str]:
    """Words of the one LCS the package reconstructs for this sentence pair."""
    # A hypothesis token absent from the reference leaves its table column equal to the previous
    # one, and the walk always steps left across such a column: dropping it changes nothing.
    present = set(reference)
    kept = [token for token in hypothesis if token in present]
    if not kept:
        return set()
    rows = len(reference)
    columns = len(kept)
    table = [[0] * (columns + 1)]
    for i in range(rows):
        token = reference[i]
        above = table[-1]
        row = [0] * (columns + 1)
        for j in range(columns):
            if kept[j] == token:
                row[j + 1] = above[j] + 1
            else:
                up, left = above[j + 1], row[j]
                row[j + 1] = up if up > left else left
        table.append(row)
    words: set[str] = set()
    i, j = rows, columns
    while i > 0 and j > 0:
        if reference[i - 1] == kept[j - 1]:
            words.add(kept[j - 1])
            i -= 1
            j -= 1
        elif table[i - 1][j] > table[i][j - 1]:
            i -= 1
        else:
            j -= 1
    return words


def rouge_l(hypothesis: str, reference: str) -> float:
    """The ``rouge`` package's rouge-l F for (hypothesis, reference). Raises :class:`EmptyText`."""
    hypothesis_sentences = sentences(hypothesis)
    reference_sentences = sentences(reference)
    if not hypothesis_sentences:
        raise EmptyText("Hypothesis is empty.")
    if not reference_sentences:
        raise EmptyText("Reference is empty.")
    return _score(tuple(hypothesis_sentences), tuple(reference_sentences))


def _score(hypothesis_sentences: tuple[str, ...], reference_sentences: tuple[str, ...]) -> float:
    hypothesis_tokens = [sentence.split(" ") for sentence in hypothesis_sentences]
    reference_tokens = [sentence.split(" ") for sentence in reference_sentences]
    distinct_reference = len({token for tokens in reference_tokens for token in tokens})
    distinct_hypothesis = len({token for tokens in hypothesis_tokens for token in tokens})
    union: set[str] = set()
    for reference_sentence in reference_tokens:
        for hypothesis_sentence in hypothesis_tokens:
            union |= _lcs_words(reference_sentence, hypothesis_sentence)
    matched = len(union)
    recall = matched / distinct_reference
    precision = matched / distinct_hypothesis
    return 2.0 * ((precision * recall) / (precision + recall + 1e-8))


def needs_deep_recursion(hypothesis: str) -> bool:
    """Whether the package's recursive reconstruction would likely abort on this hypothesis.

    The walk takes about one step per token of the longer sentence of a pair; gold references
    have at most 51 tokens per sentence, so a hypothesis sentence of ~985+ tokens is the trigger.
    """
    return any(len(s.split(" ")) >= RECURSION_STEPS for s in sentences(hypothesis))


_ROUGE_SCORE_TOKEN = re.compile(r"[a-z0-9]+")


def rouge_score_tokens(text: str) -> list[str]:
    """rouge-score's default tokenizer without stemming: lower-case, then runs of ASCII letters and digits.

    (The package replaces every other character with a space and splits; importing it pulls in
    nltk, which costs about a second per process.)
    """
    return _ROUGE_SCORE_TOKEN.findall(text.lower())


def lcs_length(a: list[str], b: list[str]) -> int:
    """Length of a longest common subsequence, bit-parallel (one big-integer step per token of ``b``)."""
    if not a or not b:
        return 0
    masks: dict[str, int] = {}
    for position, token in enumerate(a):
        masks[token] = masks.get(token, 0) | (1 << position)
    full = (1 << len(a)) - 1
    row = full
    for token in b:
        matches = row & masks.get(token, 0)
        row = ((row + matches) | (row - matches)) & full
    return len(a) - bin(row).count("1")


def rouge_score_l(hypothesis: str, reference: str) -> float:
    """rouge-score's ``rougeL`` F (stemming off): its own tokenizer, LCS over whole texts.

    The package fills a full LCS table in Python; the length alone is all its F needs, and the
    bit-parallel length is the same integer (``tests/test_rouge.py`` compares with the package).
    """
    target, prediction = rouge_score_tokens(reference), rouge_score_tokens(hypothesis)
    if not target or not prediction:
        return 0.0
    length = lcs_length(target, prediction)
    precision = length / len(prediction)
    recall = length / len(target)
    if precision + recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.0
