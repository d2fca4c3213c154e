"""Where a gold argument value comes from: the dialogue, a tool result, the tools' documentation, or a
stated derivation (a date or time written another way, a number with its unit, a language's code).

A row's *context* is what the model is shown before the target: the user's and assistant's words,
the earlier calls (their arguments and recorded results), the instruction and the descriptions of the
tools offered.
:func:`trace_value` returns how a value is traced, or None; nothing here knows which tool is judged.
"""

from __future__ import annotations

import ast
import datetime
import json
import re
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

# Kinds of source, in the order a value is looked for.
DIALOGUE = "dialogue"
TOOL_RESULT = "tool_result"
DOCUMENTATION = "documentation"


@dataclass(frozen=True)
class Context:
    """The texts a row shows before its target, by kind of source (each lower-cased, spaces collapsed)."""

    texts: dict[str, str]

    def find(self, needle: str) -> str | None:
        """The first kind of source holding ``needle`` (already normalised) as a substring."""
        for source, text in self.texts.items():
            if needle and needle in text:
                return source
        return None

    @property
    def everything(self) -> str:
        return " ".join(self.texts.values())


def normalised(text: str) -> str:
    return " ".join(str(text).lower().split())


def row_context(row: Mapping[str, Any]) -> Context:
    """The context of an evaluation row (``apibank.iter_rows``): its history and its offered tools."""
    said, results = [], []
    for turn in row["history"]:
        if turn["role"] == "API":
            results.append(turn["arguments"])
            results.append(_unescaped(turn["result"]))
        else:
            said.append(turn["text"])
    # The instruction heads the prompt: the tools' descriptions and, at levels 1 and 2, "The current
    # year is 2023."
    documentation = [row.get("instruction", "")] + [_unescaped(tool["description"]) for tool in row["tools"]]
    return Context({
        DIALOGUE: normalised(" \n ".join(said)),
        TOOL_RESULT: normalised(" \n ".join(results)),
        DOCUMENTATION: normalised(" \n ".join(documentation)),
    })


def _unescaped(text: str) -> str:
    """JSON text with its strings readable (a description's quotes unescaped), for substring search."""
    try:
        return " ".join(_leaves(json.loads(text)))
    except (TypeError, ValueError):
        return text


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    elif value is not None:
        yield str(value)


# ------------------------------------------------------------------------------------- values
def argument_leaves(value: Any) -> list[Any]:
    """The atomic values of one argument: a list written as text (``"['John', 'Jane']"``) is read as a
    literal (``ast.literal_eval``, never evaluated), dicts and lists give their leaf values."""
    if isinstance(value, str) and value.strip()[:1] in "[{" and value.strip():
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return [value]
    if isinstance(value, Mapping):
        return [leaf for key, item in value.items() if key != "name" for leaf in argument_leaves(item)]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in argument_leaves(item)]
    return [value]


MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
_MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|jun(?:e)?|jul(?:y)?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_DATE_FORMS = (
    # (pattern, group order): month day [year], day [of] month [year], ISO, m/d[/y]
    (re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?:,?\s+(\d{{4}}))?"), ("month", "day", "year")),
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b(?:,?\s+(\d{{4}}))?"), ("day", "month", "year")),
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), ("year", "month", "day")),
    (re.compile(r"\b(\d{1,2})/(\d{1,2})(?:/(\d{4}))?\b"), ("month", "day", "year")),
    (re.compile(r"\b(\d{4})\.(\d{1,2})\.(\d{1,2})\b"), ("year", "month", "day")),
    (re.compile(r"(?<![\d-])(\d{1,2})-(\d{1,2})(?![\d-])"), ("month", "day")),
)
RELATIVE_DAYS = re.compile(
    r"\b(today|tomorrow|yesterday|tonight|this (?:morning|afternoon|evening|week|month)|next (?:week|month|year|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)|last (?:week|month)|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
)
ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?: (\d{2}):(\d{2}):(\d{2}))?$")
MONTH_DAY = re.compile(r"^(\d{2})-(\d{2})$")


def stated_dates(text: str) -> list[tuple[int | None, int, int]]:
    """(year or None, month, day) of every date ``text`` writes, in any of the usual forms (``March 5th,
    2023``, ``5th of March``, ``2023-03-05``, ``3/5``, ``2023.3.5``, ``3-5``)."""
    found = []
    for pattern, order in _DATE_FORMS:
        for match in pattern.finditer(text):
            parts = dict(zip(order, match.groups()))
            month = parts["month"]
            month_number = int(month) if month.isdigit() else 1 + [m[:3] for m in MONTHS].index(month[:3])
            day = int(parts["day"])
            if 1 <= month_number <= 12 and 1 <= day <= 31:
                found.append((int(parts["year"]) if parts.get("year") else None, month_number, day))
    return found


_CLOCK = re.compile(r"\b(\d{1,2})(?::(\d{2}))?(?::\d{2})?\s*(a\.?m\.?|p\.?m\.?|o'clock)?(?=\W|$)")


def stated_times(text: str) -> set[tuple[int, int]]:
    """(hour, minute) of every clock time ``text`` writes (``9am``, ``9:30 pm``, ``14:00``, ``noon``)."""
    found: set[tuple[int, int]] = set()
    for match in _CLOCK.finditer(text):
        hour, minute, suffix = int(match.group(1)), int(match.group(2) or 0), (match.group(3) or "").replace(".", "")
        if not match.group(2) and not suffix:
            continue  # a bare number is no time
        if hour > 23 or minute > 59:
            continue
        if suffix == "pm" and hour < 12:
            hour += 12
        elif suffix == "am" and hour == 12:
            hour = 0
        found.add((hour, minute))
        if not suffix and hour < 12:
            found.add((hour + 12, minute))  # "at 3:00" in the afternoon
    if "noon" in text:
        found.add((12, 0))
    if "midnight" in text:
        found.add((0, 0))
    return found


NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?")


NUMBER_WORDS = {word: float(n) for n, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}


def stated_numbers(text: str) -> set[float]:
    """Every number ``text`` writes, in digits (thousands separators allowed) or as a word up to twelve."""
    numbers = {NUMBER_WORDS[word] for word in re.findall(r"[a-z]+", text) if word in NUMBER_WORDS}
    if re.search(r"\b(just|only) (a|one)\b|\ba single\b", text):
        numbers.add(1.0)
    for match in NUMBER.finditer(text):
        try:
            number = float(match.group().replace(",", ""))
        except ValueError:
            continue
        numbers.add(number)
        if re.match(r"\s*(km|kilomet)", text[match.end():]):
            numbers.add(number * 1000)  # a distance in kilometres, asked in metres
    return numbers


LANGUAGE_CODES = {"fr": "french", "es": "spanish", "de": "german", "zh": "chinese", "ja": "japanese", "en": "english",
                  "it": "italian", "ru": "russian", "ko": "korean", "pt": "portuguese"}
BOOLEAN_WORDS = {"true": (" on", "turn on", "switch on"), "false": (" off", "turn off", "switch off")}
STOPWORDS = frozenset("a an the of to for with on in at and or my me i is are be by from about this that it".split())


def content_words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9@.']+", text.lower()) if w.strip(".'") and w not in STOPWORDS]


WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_OFFSETS = {"today": 0, "tonight": 0, "this morning": 0, "this afternoon": 0, "this evening": 0, "tomorrow": 1,
            "yesterday": -1}


def _relative_date(target: datetime.date, context: Context) -> str | None:
    """``target`` derived from a full date the context states and a relative day the dialogue says:
    ``tomorrow`` after "today is 2021-09-27", or ``Friday`` after a stated Monday."""
    anchors = [datetime.date(y, m, d) for y, m, d in stated_dates(context.everything) if y is not None and _valid(y, m, d)]
    said = {match.group(1) for match in RELATIVE_DAYS.finditer(context.texts[DIALOGUE])}
    for anchor in anchors:
        for word in said:
            offset = _OFFSETS.get(word)
            if offset is not None and anchor + datetime.timedelta(days=offset) == target:
                return f"{word!r} from the stated date {anchor.isoformat()}"
            weekday = word.split()[-1]
            if weekday in WEEKDAYS and 0 < (target - anchor).days <= 7 and target.weekday() == WEEKDAYS.index(weekday):
                return f"{word!r} after the stated date {anchor.isoformat()}"
    return None


def _valid(year: int, month: int, day: int) -> bool:
    try:
        datetime.date(year, month, day)
    except ValueError:
        return False
    return True


def _date_traced(value: str, context: Context) -> str | None:
    match = ISO_DATE.match(value)
    if not match or not _valid(int(match.group(1)), int(match.group(2)), int(match.group(3))):
        return None
    year, month, day = int(match.group(1)), int(match.group(2)), int(match.group(3))
    for source, text in context.texts.items():
        dates = stated_dates(text)
        if (year, month, day) in dates:
            date_way = f"date stated in the {source}"
            break
        if (None, month, day) in dates and re.search(rf"\b{year}\b", context.everything):
            date_way = f"date stated in the {source}, year stated elsewhere"
            break
    else:
        date_way = _relative_date(datetime.date(year, month, day), context)
        if date_way is None:
            return None
    if match.group(4) is None:
        return date_way
    clock = (int(match.group(4)), int(match.group(5)))
    if any(clock in stated_times(text) for text in context.texts.values()):
        return date_way + "; time stated"
    return None


def trace_value(value: Any, context: Context) -> str | None:
    """How an atomic argument value is traced in ``context`` (a short phrase), or None if it is not."""
    if isinstance(value, bool):
        value = str(value)
    text = normalised(value)
    if text == "":
        return "empty value"
    try:
        number = float(text.replace(",", "")) if NUMBER.fullmatch(text) else None
    except ValueError:
        number = None
    if number is not None:
        # Numbers compare by value, sign included: 74.0060 is not traced by a stated -74.0060.
        return "number stated" if number in stated_numbers(context.everything) else None
    source = context.find(text)
    if source is not None:
        return f"verbatim in the {source}"
    derived = _date_traced(text, context)
    if derived:
        return derived
    month_day = MONTH_DAY.match(text)
    if month_day and any((m, d) == (int(month_day.group(1)), int(month_day.group(2)))
                         for _, m, d in stated_dates(context.everything)):
        return "month and day stated in the dialogue"
    if text in LANGUAGE_CODES and LANGUAGE_CODES[text] in context.texts[DIALOGUE]:
        return f"language code of {LANGUAGE_CODES[text]!r}"
    if text in BOOLEAN_WORDS and any(word in context.texts[DIALOGUE] for word in BOOLEAN_WORDS[text]):
        return "switch state stated as on/off"
    words = content_words(text)
    if words and len(words) > 1 and all(_word_in(word, context.everything) for word in words):
        return "every content word stated"
    if words and _formula_traced(text, context):
        return "arithmetic over stated numbers"
    return None


def _word_in(word: str, text: str) -> bool:
    stem = word.rstrip(".'")
    stem = stem[:-1] if len(stem) > 4 and stem.endswith("s") else stem
    return re.search(rf"\b{re.escape(stem)}", text) is not None


def _formula_traced(text: str, context: Context) -> bool:
    if not re.fullmatch(r"[\d\s.+\-*/()^%]+", text):
        return False
    stated = stated_numbers(context.everything)
    return all(float(n) in stated for n in re.findall(r"\d+(?:\.\d+)?", text))
