"""The original evaluator's call extraction and parameter parsing, bug for bug.

The original applies two regular expressions: ``\\[(\\w+)\\((.*)\\)\\]`` to find the call (leftmost,
one line, greedy to the line's last ``)]``), then a three-way alternation to pull ``key=value``
pairs out of the argument text: a quoted value (shortest non-empty run up to the next quote of
either kind), a bracketed list (greedy to the last ``]``, kept as text) or a bare word. Every value
is text; a repeated key keeps its last value.

Applied literally, those patterns backtrack quadratically on long model outputs. This module
reaches the same matches in linear time (positions found with ``str.rfind`` and anchored
sub-patterns); ``tests/test_parsing.py`` checks it against the literal patterns.
"""

from __future__ import annotations

import bisect
import re

from apibank.notation import ParsedCall

# The original patterns, kept for reference and for the differential test.
ORIGINAL_CALL_PATTERN = r"\[(\w+)\((.*)\)\]"
ORIGINAL_PARAMETER_PATTERN = r"(\w+)\s*=\s*['\"](.+?)['\"]|(\w+)\s*=\s*(\[.*\])|(\w+)\s*=\s*(\w+)"

_CALL_OPENING = re.compile(r"\[(\w+)\(")
# A key can only start where a word starts: a later start inside the same word meets the same
# text after it, so it fails wherever the word start failed.
_KEY = re.compile(r"(?<!\w)(\w+)\s*=\s*")
_WORD = re.compile(r"\w+")
_QUOTE = re.compile(r"['\"]")


def extract_paper(text: str) -> str | None:
    """The call span the original finds in ``text``, or None."""
    for line in text.split("\n"):
        last_close = line.rfind(")]")
        if last_close < 0:
            continue
        opening = _CALL_OPENING.search(line)
        if opening is not None and opening.end() <= last_close:
            return line[opening.start() : last_close + 2]
    return None


def parse_parameters(argument_text: str) -> dict[str, str]:
    """``key=value`` pairs as the original's alternation finds them; values are always text."""
    quotes = [m.start() for m in _QUOTE.finditer(argument_text)]
    last_bracket = argument_text.rfind("]")
    parameters: dict[str, str] = {}
    position = 0
    while True:
        key = _KEY.search(argument_text, position)
        if key is None:
            return parameters
        start = key.end()
        following = argument_text[start : start + 1]
        if following in ("'", '"'):
            # shortest non-empty run, closed by the next quote of either kind
            index = bisect.bisect_left(quotes, start + 2)
            if index < len(quotes):
                end = quotes[index]
                parameters[key.group(1)] = argument_text[start + 1 : end]
                position = end + 1
                continue
        if following == "[" and last_bracket > start:
            parameters[key.group(1)] = argument_text[start : last_bracket + 1]
            position = last_bracket + 1
            continue
        word = _WORD.match(argument_text, start)
        if word is not None:
            parameters[key.group(1)] = word.group(0)
            position = word.end()
            continue
        # nothing after this key matched; no other key can start before the value position
        position = start


def parse_paper(text: str) -> ParsedCall | None:
    """Find and parse the first call in ``text`` with the original's semantics; None if there is none."""
    call = extract_paper(text)
    if call is None:
        return None
    name_end = call.index("(")
    return ParsedCall(name=call[1:name_end], arguments=parse_parameters(call[name_end + 1 : -2]), text=call)
