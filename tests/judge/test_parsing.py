"""The paper parser against the original's observed behaviour and patterns; the typed parser."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apibank.judge.parsing import parse_paper
from apibank.judge.parsing.paper import (
    ORIGINAL_CALL_PATTERN,
    ORIGINAL_PARAMETER_PATTERN,
    extract_paper,
    parse_parameters,
)
from apibank.notation import ParseError, parse_call

# (model output, expected (name, parameters) or None), as the original's patterns behave.
PAPER_CASES = [
    ("API-Request: [AddAlarm(token='abc', time='2023-03-20 07:00:00')]", ("AddAlarm", {"token": "abc", "time": "2023-03-20 07:00:00"})),
    ('[QueryStock(stock_code="AAPL", date="2023-01-01")]', ("QueryStock", {"stock_code": "AAPL", "date": "2023-01-01"})),
    ("[Foo(a = 'x' , b= 'y')]", ("Foo", {"a": "x", "b": "y"})),
    ("[Foo(a='x',b='y')]", ("Foo", {"a": "x", "b": "y"})),
    ("[Calculator(formula='(5+3)*6')]", ("Calculator", {"formula": "(5+3)*6"})),
    ("[Foo(a='see )] here', b='z')]", ("Foo", {"a": "see )] here", "b": "z"})),
    ("[Calculator(formula='(5+3)*6')] and then [Foo(a='b')]", ("Calculator", {"formula": "(5+3)*6", "a": "b"})),
    ("[Foo(a='x') ] [Bar(b='y')]", ("Foo", {"a": "x", "b": "y"})),
    ("[ToolSearcher(keywords='x')]\n[Calculator(formula='1+2')]", ("ToolSearcher", {"keywords": "x"})),
    ("[Foo(a='1',\n b='2')]", None),
    ("[ Foo(a='1') ]", None),
    ("[Foo(a='1') ]", None),
    ("Foo(a='1')", None),
    ("[Foo-Bar(a='1')]", None),
    ("[Foo.Bar(a='1')]", None),
    ("[note] [Foo(a='1')]", ("Foo", {"a": "1"})),
    ("<[Foo(a='1')]>", ("Foo", {"a": "1"})),
    ("[Foo(a='1'))]", ("Foo", {"a": "1"})),
    ("[Foo()]", ("Foo", {})),
    ("[Foo('positional')]", ("Foo", {})),
    ("[LikeCount(post_id=3)]", ("LikeCount", {"post_id": "3"})),
    ("[LikeCount(post_id='3')]", ("LikeCount", {"post_id": "3"})),
    ("[GetWeather(latitude=40.7128, longitude=74.0060)]", ("GetWeather", {"latitude": "40", "longitude": "74"})),
    ("[GetWeather(latitude=-33.86, longitude=151.2)]", ("GetWeather", {"longitude": "151"})),
    ("[GetWeather(latitude='40.7128', longitude='-74.0060')]", ("GetWeather", {"latitude": "40.7128", "longitude": "-74.0060"})),
    ("[Foo(a=1.5e3)]", ("Foo", {"a": "1"})),
    ("[Foo(a=2023-03-20)]", ("Foo", {"a": "2023"})),
    ("[Foo(a=x_y-z)]", ("Foo", {"a": "x_y"})),
    ("[Foo(a=hello world)]", ("Foo", {"a": "hello"})),
    ("[TimedSwitch(name='light', on=True)]", ("TimedSwitch", {"name": "light", "on": "True"})),
    ("[Foo(a=None)]", ("Foo", {"a": "None"})),
    ("[AddMeeting(topic='x', attendees=['John', 'Jane'])]", ("AddMeeting", {"topic": "x", "attendees": "['John', 'Jane']"})),
    ("[AddMeeting(topic='x', attendees='['John', 'Jane']')]", ("AddMeeting", {"topic": "x", "attendees": "["})),
    ("[Foo(a=['x'], b=['y'])]", ("Foo", {"a": "['x'], b=['y']"})),
    ("[Foo(a=['x'], b='y')]", ("Foo", {"a": "['x']", "b": "y"})),
    (
        "[RecordHealthData(user_id='1', health_data=[{'name': 'bp', 'value': '120/80'}])]",
        ("RecordHealthData", {"user_id": "1", "health_data": "[{'name': 'bp', 'value': '120/80'}]"}),
    ),
    ("[UpdateAccount(username='u', address={'street': 'Main', 'city': 'X'})]", ("UpdateAccount", {"username": "u"})),
    ("[Foo(a=\"it's\", b='c')]", ("Foo", {"a": "it", "b": "c"})),
    ("[Foo(a='it\\'s', b='c')]", ("Foo", {"a": "it\\", "b": "c"})),
    ('[Foo(a="He said \\"hi\\"")]', ("Foo", {"a": "He said \\"})),
    ("[Foo(a=\"x', b='y\")]", ("Foo", {"a": "x", "b": "y"})),
    ("[Foo(a='', b='c')]", ("Foo", {"a": "', b="})),
    ('[Foo(a="")]', ("Foo", {})),
    ("[Foo(a='x=y', b='z')]", ("Foo", {"a": "x=y", "b": "z"})),
    ("[Foo(a='x, b=y')]", ("Foo", {"a": "x, b=y"})),
    ("[Foo(a=' padded ')]", ("Foo", {"a": " padded "})),
    ("[Foo(a='x', a='y')]", ("Foo", {"a": "y"})),
    ("[Foo(a=`x`)]", ("Foo", {})),
    ("[Foo(a='café', b='日本')]", ("Foo", {"a": "café", "b": "日本"})),
]


@pytest.mark.parametrize("text, expected", PAPER_CASES)
def test_paper_parser_matches_the_observed_original(text, expected):
    parsed = parse_paper(text)
    if expected is None:
        assert parsed is None
    else:
        assert parsed is not None
        assert (parsed.name, parsed.arguments) == expected
        assert list(parsed.arguments) == list(expected[1])


def _original(text: str):
    """The original's two patterns applied literally (quadratic, fine for short texts)."""
    match = re.search(ORIGINAL_CALL_PATTERN, text)
    if match is None:
        return None
    call = match.group(0)
    inner = re.search(ORIGINAL_CALL_PATTERN, call)
    parameters = {}
    for found in re.finditer(ORIGINAL_PARAMETER_PATTERN, inner.group(2)):
        if found.group(1):
            parameters[found.group(1)] = found.group(2)
        elif found.group(3):
            parameters[found.group(3)] = found.group(4)
        elif found.group(5):
            parameters[found.group(5)] = found.group(6)
    return call, inner.group(1), parameters


_ALPHABET = st.sampled_from(list("ab_1 =,'\"[](){}.-\n\té日") + ["[Foo(", ")]", "a='", "b=[", "x=1", "'c'"])


@settings(max_examples=1500, deadline=None)
@given(st.lists(_ALPHABET, max_size=30).map("".join))
def test_paper_parser_agrees_with_the_original_patterns(text):
    expected = _original(text)
    parsed = parse_paper(text)
    if expected is None:
        assert parsed is None
    else:
        assert parsed is not None
        assert (parsed.text, parsed.name, parsed.arguments) == expected
        assert list(parsed.arguments) == list(expected[2])


@settings(max_examples=1000, deadline=None)
@given(st.lists(_ALPHABET, max_size=30).map("".join))
def test_parameter_scanner_agrees_on_arbitrary_argument_text(text):
    flat = text.replace("\n", " ")
    expected = {}
    for found in re.finditer(ORIGINAL_PARAMETER_PATTERN, flat):
        key = found.group(1) or found.group(3) or found.group(5)
        expected[key] = found.group(2) if found.group(1) else found.group(4) if found.group(3) else found.group(6)
    assert parse_parameters(flat) == expected


def test_paper_parser_is_linear_on_hostile_text():
    import time

    hostile = "[a(" * 50_000 + "a='" * 50_000 + "a=[" * 50_000 + "x" * 100_000 + ")]"
    start = time.process_time()  # CPU time: the machine's load does not count
    parse_paper(hostile)
    extract_paper("[" + "a" * 200_000)
    assert time.process_time() - start < 2.0


TYPED_CASES = [
    ("API-Request: [AddAlarm(token='abc', time='2023-03-20 07:00:00')]", ("AddAlarm", {"token": "abc", "time": "2023-03-20 07:00:00"})),
    ("[GetWeather(latitude=-33.86, longitude=151.2)]", ("GetWeather", {"latitude": -33.86, "longitude": 151.2})),
    ("[ Foo(a=[1, 2], b={'x': None}, c=True) ]", ("Foo", {"a": [1, 2], "b": {"x": None}, "c": True})),
    ("[Foo(a='1',\n b='2')]", ("Foo", {"a": "1", "b": "2"})),
    ("[Foo(a=\"it's\", b='c')]", ("Foo", {"a": "it's", "b": "c"})),
    ("[Foo(a='it\\'s')]", ("Foo", {"a": "it's"})),
    ("[Calculator(formula='(5+3)*6')] and then [Foo(a='b')]", ("Calculator", {"formula": "(5+3)*6"})),
    ("[GetToday()]", ("GetToday", {})),
    # the annotation's own unescaped notation
    ("[AddMeeting(topic='x', attendees='['John', 'Jane']')]", ("AddMeeting", {"topic": "x", "attendees": "['John', 'Jane']"})),
    ("[AddAgenda(content='Don't forget', time='2023-01-01')]", ("AddAgenda", {"content": "Don't forget", "time": "2023-01-01"})),
    ("[Foo(a='x, b=y')]", ("Foo", {"a": "x, b=y"})),
    ("no call here", None),
    ("[Foo(a='1') ", None),
]


@pytest.mark.parametrize("text, expected", TYPED_CASES)
def test_typed_parser(text, expected):
    parsed = parse_call(text)
    if expected is None:
        assert parsed is None
    else:
        assert (parsed.name, parsed.arguments) == expected


@pytest.mark.parametrize(
    "text",
    [
        "[Foo(a=x)]",  # a name, not a literal
        "[Foo(a=__import__('os').system('true'))]",
        "[Foo('positional')]",
        "[Foo(**{'a': 1})]",
        "[Foo(a=1+2)]",
        "[Foo(a=f'{x}')]",
        "[Foo(a=b'bytes')]",
        "[Foo(a=1j)]",
        "[Foo(a=1, a=2)]",
        "[Foo(a=" + "[" * 500 + "]" * 500 + ")]",
    ],
)
def test_typed_parser_rejects_non_literals(text):
    with pytest.raises(ParseError):
        parse_call(text)
