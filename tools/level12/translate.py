"""Translate, answered offline from the translations recorded in the benchmark's dialogues.

Upstream called the online Google Translate service. Here a call is answered only when the
dialogue files (``lv1-lv2-samples/**/*.jsonl``) hold a recorded successful Translate result for the
same text and target language (and the same source language, when both name one); anything else
fails with a clear message. Language names are resolved exactly as upstream resolves them.

Upstream's ``ALL_PROXY`` bug (the first call of a process escaping with ``str expected, not
NoneType`` when the variable is unset) is not reproduced: no recorded result shows it, and it
depends on process history rather than on the call.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from ..base import Record, Tool, ToolError, fields_equal
from ..data import DataSource
from ..registry import LEVEL_1_2

DIALOGUES = "lv1-lv2-samples"

# googletrans 3.1.0a0's table, in its order (the first match wins; both iw and he mean hebrew).
_LANGUAGE_TABLE = (
    "af afrikaans; sq albanian; am amharic; ar arabic; hy armenian; az azerbaijani; eu basque; be belarusian; "
    "bn bengali; bs bosnian; bg bulgarian; ca catalan; ceb cebuano; ny chichewa; zh-cn chinese (simplified); "
    "zh-tw chinese (traditional); co corsican; hr croatian; cs czech; da danish; nl dutch; en english; "
    "eo esperanto; et estonian; tl filipino; fi finnish; fr french; fy frisian; gl galician; ka georgian; "
    "de german; el greek; gu gujarati; ht haitian creole; ha hausa; haw hawaiian; iw hebrew; he hebrew; "
    "hi hindi; hmn hmong; hu hungarian; is icelandic; ig igbo; id indonesian; ga irish; it italian; "
    "ja japanese; jw javanese; kn kannada; kk kazakh; km khmer; ko korean; ku kurdish (kurmanji); ky kyrgyz; "
    "lo lao; la latin; lv latvian; lt lithuanian; lb luxembourgish; mk macedonian; mg malagasy; ms malay; "
    "ml malayalam; mt maltese; mi maori; mr marathi; mn mongolian; my myanmar (burmese); ne nepali; "
    "no norwegian; or odia; ps pashto; fa persian; pl polish; pt portuguese; pa punjabi; ro romanian; "
    "ru russian; sm samoan; gd scots gaelic; sr serbian; st sesotho; sn shona; sd sindhi; si sinhala; "
    "sk slovak; sl slovenian; so somali; es spanish; su sundanese; sw swahili; sv swedish; tg tajik; "
    "ta tamil; te telugu; th thai; tr turkish; uk ukrainian; ur urdu; ug uyghur; uz uzbek; vi vietnamese; "
    "cy welsh; xh xhosa; yi yiddish; yo yoruba; zu zulu"
)
LANGUAGES: tuple[tuple[str, str], ...] = tuple(
    tuple(entry.split(" ", 1)) for entry in _LANGUAGE_TABLE.split("; ")  # type: ignore[misc]
)
AUTO = "auto"


def language_code(value: Any) -> str:
    """Upstream's lenient resolution: a code, or any text containing a language name."""
    text = value.lower()
    if "chinese" in text:
        return "zh-tw" if "traditional" in text else "zh-cn"
    for code, name in LANGUAGES:
        if code == text or name in text:
            return code
    raise ToolError("Language not supported.")


# (src, target code) -> list of (source code or AUTO, translated text), per data source.
_RecordedTable = dict[tuple[str, str], list[tuple[str, str]]]
_recorded: dict[str, _RecordedTable] = {}
_recorded_lock = threading.Lock()


def recorded_translations(source: DataSource) -> _RecordedTable:
    """The successful Translate results recorded in the dialogue files of a data source."""
    with _recorded_lock:
        if source.key not in _recorded:
            _recorded[source.key] = _load_recorded(source)
        return _recorded[source.key]


def _load_recorded(data_source: DataSource) -> _RecordedTable:
    table: _RecordedTable = {}
    for path in data_source.paths(DIALOGUES, ".jsonl"):
        for line in data_source.read_text(path).splitlines():
            if '"Translate"' not in line:
                continue
            turn = json.loads(line)
            result = turn.get("result") or {}
            if turn.get("role") != "API" or turn.get("api_name") != "Translate" or result.get("exception") is not None:
                continue
            arguments = result.get("input") or {}
            try:
                target = language_code(arguments.get("tgt_lang", "en"))
                source = language_code(arguments["src_lang"]) if "src_lang" in arguments else AUTO
            except ToolError:
                continue
            entries = table.setdefault((arguments["src"], target), [])
            if (source, result["output"]) not in entries:
                entries.append((source, result["output"]))
    return table


@LEVEL_1_2.register
class Translate(Tool):
    name = "Translate"
    description = "Translate the text to the target language."
    input_parameters = {
        "src": {"type": "str", "description": "The text to be translated."},
        "src_lang": {"type": "str", "description": "[Optional] The source language to translate from. Default is auto."},
        "tgt_lang": {"type": "str", "description": "[Optional] The target language to translate to. Default is english/en."},
    }
    output_parameters = {"translated_text": {"type": "str", "description": "The translated text."}}
    defaults = {"src_lang": None, "tgt_lang": None}

    @classmethod
    def preload(cls, source: DataSource) -> None:
        recorded_translations(source)

    def execute(self, arguments: dict[str, Any]) -> Record:
        # The envelope lists only the optional parameters actually supplied, in the order supplied.
        self._supplied = [key for key in arguments if key != "src"]
        return super().execute(arguments)

    def echo_input(self, values: dict[str, Any]) -> Any:
        supplied = getattr(self, "_supplied", [])
        return {"src": values["src"], **{key: values[key] for key in supplied}}

    def run(self, src: Any, src_lang: Any, tgt_lang: Any) -> str:
        target = "en" if tgt_lang is None else language_code(tgt_lang)
        source = AUTO if src_lang is None else language_code(src_lang)
        candidates = recorded_translations(self.session.data.source).get((src, target), [])
        for recorded_source, text in candidates:
            if AUTO in (source, recorded_source) or source == recorded_source:
                return text
        raise ToolError(
            f"Translate works offline and knows only the benchmark's recorded translations; "
            f"none for {src!r} from {source} to {target}."
        )

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        if response["api_name"] != gold["api_name"] or response["input"]["src"] != gold["input"]["src"]:
            return False
        return fields_equal(response, gold, "output", "exception")
