"""Finding and parsing API calls in model output.

Two parsers, one per scoring protocol:

* :mod:`.paper` reproduces the original evaluator's regular expressions: every
  value is text, lists are raw text, unquoted numbers stop at the first non-word character.
* :mod:`.typed` is the corrected protocol's parser: the call is parsed with ``ast`` and only
  literal keyword arguments are accepted (nothing is ever evaluated).

Both return a :class:`ParsedCall` or ``None`` when no call is present.
"""

from apibank.judge.parsing.call import ParsedCall, ParseError
from apibank.judge.parsing.paper import extract_paper, parse_paper
from apibank.judge.parsing.typed import extract_typed, parse_typed

__all__ = ["ParsedCall", "ParseError", "extract_paper", "parse_paper", "extract_typed", "parse_typed"]
