"""Finding and parsing API calls in model output, one reading per scoring protocol.

* :mod:`.paper` reproduces the original evaluator's regular expressions: every value is text,
  lists are raw text, unquoted numbers stop at the first non-word character.
* The corrected protocol reads calls with the notation's own reader, :func:`apibank.notation.parse_call`
  (``ast`` literals only, nothing is ever evaluated).

Both return a :class:`~apibank.notation.ParsedCall` or ``None`` when no call is present.
"""

from apibank.judge.parsing.paper import extract_paper, parse_paper

__all__ = ["extract_paper", "parse_paper"]
