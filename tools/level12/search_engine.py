"""SearchEngine: BM25 (Okapi) over the shipped documents, with an offline word tokenizer.

Upstream tokenised the keyword with NLTK's ``word_tokenize``, which needs the Punkt model at run
time. ``treebank_tokens`` reproduces its tokens without any NLTK data: a light sentence-final
period rule stands in for Punkt, then Penn-Treebank word splitting (punctuation, brackets,
quotes, clitics) is applied. The shipped ``tokenized_documents`` were produced by that tokenizer
from ``"<title> - <abstract>"`` lowercased; the tests hold this tokenizer to them.

BM25 is written out here (no ``rank_bm25``); the arithmetic follows the same order of operations,
so scores are bit-identical.
"""

from __future__ import annotations

import copy
import math
import re
from collections import Counter
from typing import Any, Sequence

from ..base import Record, Tool
from ..registry import LEVEL_1_2

K1, B, EPSILON = 1.5, 0.75, 0.25
TOP_N = 2

# Words whose final period Punkt keeps (abbreviations); single letters and dotted forms are kept too.
_ABBREVIATIONS = frozenset("mr mrs ms dr prof st jr sr vs etc inc ltd co corp jan feb mar apr jun jul aug sep sept oct nov dec".split())
_CLOSERS = "\"')]}>"

# Ordered (pattern, replacement) rewrites; each pads the pieces it separates with spaces.
_REWRITES: list[tuple[re.Pattern[str], str]] = [
    # opening double quotes become ``
    (re.compile(r'^"'), " `` "),
    (re.compile(r'(?<=[\s(\[{<])"'), " `` "),
    (re.compile(r"``"), " `` "),
    (re.compile(r"(?<=[\s(\[{<])''"), " `` "),
    # a quote opening a word that is not a clitic
    (re.compile(r"(?i)(?<![\w'])'(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)"), " ' "),
    # commas and colons split unless inside a number
    (re.compile(r"([:,])(?=[^\d]|$)"), r" \1 "),
    (re.compile(r"\.\.\."), " ... "),
    (re.compile(r"[;@#$%&?!]"), r" \g<0> "),
    (re.compile(r"[\]\[(){}<>]"), r" \g<0> "),
    (re.compile(r"--"), " -- "),
    # closing double quotes become ''
    (re.compile(r'"'), " '' "),
    (re.compile(r"''"), " '' "),
    # clitics and a trailing apostrophe
    (re.compile(r"(?i)(?<=[^' ])('s|'m|'d|')(?=\s|$)"), r" \1 "),
    (re.compile(r"(?i)(?<=[^' ])('ll|'re|'ve|n't)(?=\s|$)"), r" \1 "),
    # words the Treebank conventions split in two
    (re.compile(r"(?i)\b(can)(not)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(d)('ye)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(gim)(me)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(gon)(na)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(got)(ta)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(lem)(me)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(more)('n)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(wan)(na)(?=\s)"), r" \1 \2 "),
]


def _split_final_period(chunk: str, last: bool) -> list[str]:
    """Separate a sentence-ending period from a whitespace-delimited chunk (the Punkt stand-in)."""
    body = chunk.rstrip(_CLOSERS)
    closers = chunk[len(body):]
    if not body.endswith(".") or body.endswith("..") or len(body) < 2:
        return [chunk]
    word = body[:-1]
    if not last:
        stem = word.lstrip("\"'([{<`")
        if len(stem) == 1 and stem.isalpha() or "." in stem or stem.lower() in _ABBREVIATIONS:
            return [chunk]
    return [word, "." + closers]


def treebank_tokens(text: str) -> list[str]:
    """NLTK ``word_tokenize``-compatible tokens, computed without NLTK data."""
    chunks = text.split()
    pieces: list[str] = []
    for index, chunk in enumerate(chunks):
        pieces.extend(_split_final_period(chunk, index == len(chunks) - 1))
    tokens: list[str] = []
    for piece in pieces:
        if piece.startswith(".") and len(piece) > 1 and set(piece[1:]) <= set(_CLOSERS):
            # a split-off period with the quotes/brackets that closed its sentence
            tokens.append(".")
            tokens.extend("''" if closer == '"' else closer for closer in piece[1:])
            continue
        # Only the text's first piece may match the start-of-text rules.
        padded = f"{piece} " if not tokens else f" {piece} "
        for pattern, replacement in _REWRITES:
            padded = pattern.sub(replacement, padded)
        tokens.extend(padded.split())
    return tokens


class Bm25:
    """Okapi BM25 with the negative-idf floor of ``epsilon`` times the mean idf."""

    def __init__(self, corpus: Sequence[Sequence[str]]) -> None:
        self.size = len(corpus)
        self.lengths = [len(document) for document in corpus]
        self.average_length = sum(self.lengths) / self.size
        self.frequencies = [Counter(document) for document in corpus]
        containing = Counter(term for document in corpus for term in set(document))
        idf = {term: math.log(self.size - n + 0.5) - math.log(n + 0.5) for term, n in containing.items()}
        floor = EPSILON * (sum(idf.values()) / len(idf))
        self.idf = {term: (floor if value < 0 else value) for term, value in idf.items()}

    def scores(self, query: Sequence[str]) -> list[float]:
        totals = [0.0] * self.size
        for term in query:
            idf = self.idf.get(term) or 0
            for index, frequencies in enumerate(self.frequencies):
                frequency = frequencies.get(term, 0)
                norm = K1 * (1 - B + B * self.lengths[index] / self.average_length)
                totals[index] += idf * (frequency * (K1 + 1) / (frequency + norm))
        return totals

    def ranking(self, query: Sequence[str]) -> list[int]:
        """Document indices by descending score; ties in ascending index, as on the reference machine."""
        scores = self.scores(query)
        return sorted(range(self.size), key=lambda index: -scores[index])


@LEVEL_1_2.register
class SearchEngine(Tool):
    name = "SearchEngine"
    description = "This API searches for a given keyword for search engine."
    input_parameters = {"keyword": {"type": "str", "description": "The keyword to search."}}
    output_parameters = {"results": {"type": "list", "description": "The list of results."}}
    database = "SearchEngine"

    def __init__(self, session: Any) -> None:
        super().__init__(session)
        self._index: Bm25 | None = None

    def run(self, keyword: Any) -> list[dict[str, str]]:
        data = self.session.store("SearchEngine", writable=False)
        if self._index is None:
            self._index = Bm25(data["tokenized_documents"])
        ranking = self._index.ranking(treebank_tokens(keyword.lower().strip()))
        return [copy.deepcopy(data["raw_documents"][index]) for index in ranking[:TOP_N]]

    @staticmethod
    def _sorted(results: list[dict[str, str]]) -> list[dict[str, str]]:
        return sorted(results, key=lambda result: result["title"] + result["abstract"], reverse=True)

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        if response["api_name"] != gold["api_name"] or response["exception"] != gold["exception"]:
            return False
        if response["output"] is None and gold["output"] is None:
            # Upstream compares two sorted lists that are only bound when an output exists.
            raise UnboundLocalError("cannot access local variable 'response_results' where it is not associated with a value")
        if response["output"] is None or gold["output"] is None:
            return False
        return cls._sorted(response["output"]) == cls._sorted(gold["output"])

    @classmethod
    def check_corrected(cls, response: Record, gold: Record) -> bool:
        try:
            if response["api_name"] != gold["api_name"] or response["exception"] != gold["exception"]:
                return False
            if response["output"] is None or gold["output"] is None:
                return response["output"] is None and gold["output"] is None
            return cls._sorted(response["output"]) == cls._sorted(gold["output"])
        except (KeyError, TypeError):
            return False
