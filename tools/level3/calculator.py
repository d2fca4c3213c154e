"""Calculator (level-3 copy; same behaviour as the level-1/2 tool).

Upstream evaluates a token list by repeatedly splicing it: first every parenthesised group (the
first ``(`` with the first ``)``), then the leftmost ``*``/``/``, then the leftmost ``+``/``-``, each
replaced together with its two neighbours. This module reproduces the results and error texts of
that procedure with single left-to-right passes, so that every formula costs time linear in its
length. Where upstream never terminates (an operator at the start of a (sub)list), the call fails
with :data:`NEVER_TERMINATES` instead.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

from ..base import Record, ToolError
from ..registry import LEVEL_3
from ._common import Level3Tool

ALLOWED = frozenset("0123456789+-*/()")
OPERATORS = frozenset("+-*/")
NEVER_TERMINATES = "invalid formula: an operator starts an expression, which upstream never finishes evaluating"

Token = Any  # a float, or a one-character operator/parenthesis text
BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
}


def is_valid(formula: str) -> bool:
    operator_count = sum(formula.count(op) for op in OPERATORS)
    return (
        formula != ""
        and set(formula) <= ALLOWED
        and formula.count("(") == formula.count(")")
        and operator_count > 0
        and operator_count + 1 != len(formula)
    )


def tokenize(formula: str) -> list[Token]:
    tokens: list[Token] = []
    digits = ""
    for char in formula:
        if char.isdigit():
            digits += char
            continue
        if digits:
            tokens.append(float(digits))
            digits = ""
        tokens.append(char)
    if digits:
        tokens.append(float(digits))
    return tokens


def _is(token: Token, symbol: str) -> bool:
    return isinstance(token, str) and token == symbol


def _first_token(tokens: list[Token]) -> Token:
    if not tokens:
        raise IndexError("list index out of range")
    return tokens[0]


def _resolve_groups(tokens: list[Token]) -> list[Token]:
    """Replace each parenthesised group by its value, as upstream's first-'('/first-')' splice does."""
    openings = [i for i, t in enumerate(tokens) if _is(t, "(")]
    if not openings:
        return tokens
    closings = [i for i, t in enumerate(tokens) if _is(t, ")")]
    result: list[Token] = []
    start = 0  # tokens before ``start`` are already in ``result``; none of them is a parenthesis
    next_close = 0
    for opening in openings:
        if opening < start:  # this '(' sat inside a group already replaced
            continue
        while next_close < len(closings) and closings[next_close] < start:
            next_close += 1
        if next_close == len(closings):
            raise ValueError("')' is not in list")
        closing = closings[next_close]
        # A ')' before the '(' leaves an empty span between them: upstream evaluates it and fails.
        inner = tokens[opening + 1 : closing] if closing > opening else []
        value = evaluate(inner)
        result.extend(tokens[start:opening])
        result.append(value)
        start = closing + 1
    result.extend(tokens[start:])
    return result


def _reduce(tokens: list[Token], symbols: str) -> list[Token]:
    """Apply every operator of one precedence level, leftmost first, to its two neighbours."""
    if not tokens or not any(isinstance(t, str) and t in symbols for t in tokens):
        return tokens
    if isinstance(tokens[0], str) and tokens[0] in symbols:
        # Upstream's left neighbour is then the last token, and the splice inserts instead of
        # replacing, so the operator stays first forever. Only the first application can fail.
        if len(tokens) < 2:
            raise IndexError("list index out of range")
        BINARY[tokens[0]](tokens[-1], tokens[1])
        raise ToolError(NEVER_TERMINATES)
    result: list[Token] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if isinstance(token, str) and token in symbols:
            if index + 1 >= len(tokens):
                raise IndexError("list index out of range")
            left = result.pop()
            result.append(BINARY[token](left, tokens[index + 1]))
            index += 2
        else:
            result.append(token)
            index += 1
    return result


def evaluate(tokens: list[Token]) -> Token:
    tokens = _resolve_groups(tokens)
    tokens = _reduce(tokens, "*/")
    tokens = _reduce(tokens, "+-")
    return _first_token(tokens)


@LEVEL_3.register
class Calculator(Level3Tool):
    name = "Calculator"
    description = (
        "This API provides basic arithmetic operations: addition, subtraction, multiplication, and division."
    )
    input_parameters = {
        "formula": {
            "type": "str",
            "description": "The formula that needs to be calculated. Only integers are supported. Valid operators "
            "are +, -, *, /, and (, ). For example, '(1 + 2) * 3'.",
        }
    }
    output_parameters = {"result": {"type": "float", "description": "The result of the formula."}}

    def run(self, formula: Any) -> Any:
        formula = formula.replace(" ", "")
        if not is_valid(formula):
            raise ToolError("invalid formula")
        return evaluate(tokenize(formula))

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        return (
            response["input"]["formula"].replace(" ", "") == gold["input"]["formula"].replace(" ", "")
            and response["output"] == gold["output"]
            and response["exception"] == gold["exception"]
        )
