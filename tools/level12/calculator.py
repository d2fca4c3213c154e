"""Calculator: upstream's integer-formula evaluator, re-implemented without ``eval``.

Upstream tokenises the formula and evaluates it by repeatedly replacing the first parenthesised
group, then the leftmost ``*``/``/``, then the leftmost ``+``/``-`` with its result. This module
reproduces those semantics, degenerate cases and Python error texts included, in linear passes instead of repeated list surgery, so that any input finishes fast.
"""

from __future__ import annotations

import operator
import re
from typing import Any, Callable

from ..base import Record, Tool, ToolError
from ..registry import LEVEL_1_2

_ALLOWED = frozenset("0123456789+-*/()")
_OPERATORS = frozenset("+-*/")
_DIGITS = frozenset("0123456789")
_APPLY: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
}

# Upstream never returns for these; we fail instead (see Calculator's docstring).
NON_TERMINATING = "invalid formula: an operator at the start of a (sub)formula never finishes evaluating"


_TOKEN = re.compile(r"[0-9]+|[^0-9]")


def tokenise(formula: str) -> list[Any]:
    """Maximal digit runs become floats; every other character is a token of its own."""
    return [float(piece) if piece[0] in _DIGITS else piece for piece in _TOKEN.findall(formula)]


def _reduce_level(tokens: list[Any], level: frozenset[str]) -> list[Any]:
    """Apply every operator of one precedence level, leftmost first.

    Upstream replaces tokens k-1..k+1 by the result. With the operator first (k = 0) the slice
    starts at the list's end, the "replacement" inserts instead, and the same operation repeats
    forever; its first application can still fail, which upstream reports.
    """
    if tokens and tokens[0] in level:
        if len(tokens) < 2:
            raise IndexError("list index out of range")
        _APPLY[tokens[0]](tokens[-1], tokens[1])
        raise ToolError(NON_TERMINATING)
    reduced: list[Any] = []
    position = 0
    while position < len(tokens):
        token = tokens[position]
        if isinstance(token, str) and token in level:
            left = reduced[-1]
            if position + 1 >= len(tokens):
                raise IndexError("list index out of range")
            reduced[-1] = _APPLY[token](left, tokens[position + 1])
            position += 2
        else:
            reduced.append(token)
            position += 1
    return reduced


def _evaluate_flat(tokens: list[Any]) -> Any:
    """Upstream's procedure on a token list without parentheses: returns its first token."""
    tokens = _reduce_level(tokens, frozenset("*/"))
    tokens = _reduce_level(tokens, frozenset("+-"))
    if not tokens:
        raise IndexError("list index out of range")
    return tokens[0]


def evaluate(tokens: list[Any]) -> Any:
    """Upstream's procedure: each group between the first ``(`` and the first ``)`` is evaluated
    and replaced, left to right; a group that itself contains ``(`` fails as upstream's nested
    lookup of ``)`` does, and a ``)`` before every ``(`` leaves an empty group.
    """
    flat: list[Any] = []
    position = 0
    while position < len(tokens):
        token = tokens[position]
        if token == ")" and "(" in tokens[position:]:
            raise IndexError("list index out of range")
        if token != "(":
            flat.append(token)
            position += 1
            continue
        end = position + 1
        while end < len(tokens) and tokens[end] not in ("(", ")"):
            end += 1
        if end == len(tokens) or tokens[end] == "(":
            raise ValueError("')' is not in list")
        flat.append(_evaluate_flat(tokens[position + 1 : end]))
        position = end + 1
    return _evaluate_flat(flat)


def _is_valid(formula: str) -> bool:
    if formula == "" or not set(formula) <= _ALLOWED:
        return False
    if formula.count("(") != formula.count(")"):
        return False
    operators = sum(formula.count(op) for op in _OPERATORS)
    return operators != 0 and operators + 1 != len(formula)


@LEVEL_1_2.register
class Calculator(Tool):
    """Evaluates with upstream's left-to-right procedure in IEEE doubles; never ``eval``.

    Reproduced: every result and failure text the original produces (``')' is not in list`` for nested
    parentheses, ``list index out of range``, Python's operand-type errors, ``float division by
    zero``, juxtaposed groups returning their first value). Not reproducible: formulas where an
    operator starts a (sub)formula (``-5+3``, ``5*(-2)``) make upstream loop forever; here they
    fail with :data:`NON_TERMINATING` (after any error upstream's first step would have raised).
    Work is linear in the formula's length: a ``)`` search is bounded by the pass, digit runs
    become floats directly (huge ones become ``inf``), so hostile formulas end quickly.
    """

    name = "Calculator"
    description = "This API provides basic arithmetic operations: addition, subtraction, multiplication, and division."
    input_parameters = {
        "formula": {"type": "str", "description": "The formula that needs to be calculated. Only integers are supported. Valid operators are +, -, *, /, and (, ). For example, '(1 + 2) * 3'."},
    }
    output_parameters = {
        "result": {"type": "float", "description": "The result of the formula."},
    }

    def run(self, formula: Any) -> float:
        compact = formula.replace(" ", "")
        if not _is_valid(compact):
            raise ToolError("invalid formula")
        return evaluate(tokenise(compact))

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return (
            response["input"]["formula"].replace(" ", "") == gold["input"]["formula"].replace(" ", "")
            and response["output"] == gold["output"]
            and response["exception"] == gold["exception"]
        )
