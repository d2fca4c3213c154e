"""Level-1/2 tools ModifyPassword … Wiki: prompt schemas, quirks, offline Translate/SearchEngine, gold replays."""

from __future__ import annotations

import copy
import inspect
import json
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest
from apibank_tools.base import CallRejected
from apibank_tools.environment import new_session
from apibank_tools.level12.search_engine import Bm25, treebank_tokens
from apibank_tools.level12.translate import language_code
from apibank_tools.registry import LEVEL_1_2

MINE = (
    "ModifyPassword ModifyRegistration ModifyReminder ModifyScene OpenBankAccount PlayMusic QueryAgenda "
    "QueryAlarm QueryBalance QueryHealthData QueryHistoryToday QueryMeeting QueryRegistration QueryReminder "
    "QueryScene QueryStock RecordHealthData RegisterUser SearchEngine SendEmail SpeechRecognition SymptomSearch "
    "TimedSwitch Translate Wiki"
).split()

# How the recorded gold calls replay: gold calls, exact on fresh state, exact only after
# replaying the dialogue's earlier gold calls, not reproducible. Documented improvements over the table:
# Translate answers offline from the recorded translations (4 fresh instead of 0 reproducible), and
# QueryRegistration's `Mary` call becomes exact after replay because AppointmentRegistration adopts the
# recorded appointment id (the spec counts it "not reproducible" without imposing that id).
EXPECTED = {
    "ModifyPassword": (6, 6, 0, 0),
    "ModifyRegistration": (15, 15, 0, 0),
    "ModifyReminder": (9, 9, 0, 0),
    "OpenBankAccount": (15, 15, 0, 0),
    "PlayMusic": (3, 3, 0, 0),
    "QueryAgenda": (1, 1, 0, 0),
    "QueryAlarm": (2, 2, 0, 0),
    "QueryBalance": (12, 12, 0, 0),
    "QueryHealthData": (6, 6, 0, 0),
    "QueryHistoryToday": (11, 11, 0, 0),
    "QueryMeeting": (5, 5, 0, 0),
    "QueryRegistration": (17, 16, 1, 0),
    "QueryReminder": (5, 5, 0, 0),
    "QueryScene": (5, 0, 0, 5),  # recorded device names capitalised, shipped data lowercase
    "QueryStock": (17, 17, 0, 0),
    "RecordHealthData": (22, 22, 0, 0),
    "RegisterUser": (7, 0, 0, 7),  # random token (recorded ones are 32 characters long)
    "SearchEngine": (1, 1, 0, 0),
    "SendEmail": (1, 1, 0, 0),
    "SpeechRecognition": (1, 1, 0, 0),
    "SymptomSearch": (12, 12, 0, 0),
    "TimedSwitch": (3, 0, 0, 3),  # gold calls use the renamed parameter device_id
    "Translate": (4, 4, 0, 0),
    "Wiki": (1, 1, 0, 0),
}


@lru_cache(maxsize=1)
def _dialogues(data_dir: Path) -> list[tuple[str, list[dict]]]:
    found = []
    for path in sorted(data_dir.glob("lv1-lv2-samples/*/*.jsonl")):
        turns = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
        found.append((f"{path.parent.name}/{path.name}", [t for t in turns if t.get("role") == "API"]))
    return found


def _gold_calls(data_dir: Path):
    """(file, tool, earlier gold turns, this gold turn) for every gold call of the tools under test."""
    for name, calls in _dialogues(data_dir):
        for index, turn in enumerate(calls):
            if turn["api_name"] in MINE:
                yield name, turn["api_name"], calls[:index], turn


def _execute(data_dir, tool, earlier, turn):
    session = new_session("level-1-2", data_dir)
    # ToolSearcher changes no state and would load an embedding model: leave it out of replays.
    session.replay(
        (t["api_name"], copy.deepcopy(t["result"]["input"]), t["result"]) for t in earlier if t["api_name"] != "ToolSearcher"
    )
    try:
        return session.call(tool, copy.deepcopy(turn["result"]["input"]), coercion="none")
    except CallRejected as rejection:
        return rejection


# ------------------------------------------------------------------------------------ schemas
def test_descriptions_match_the_benchmark_prompts(data_dir):
    lines: dict[str, set[str]] = {}
    for file in ("level-1-api.json", "level-2-api.json"):
        for sample in json.loads((data_dir / "test-data" / file).read_text("utf-8")):
            for line in sample["instruction"].splitlines():
                if line.startswith('{"name": "'):
                    lines.setdefault(json.loads(line)["name"], set()).add(line)
    compared = [name for name in MINE if name in lines]
    assert sorted(set(MINE) - set(compared)) == ["ModifyScene"]  # no benchmark prompt shows it
    for name in compared:
        if name == "Translate":
            # The test prompts carry an older description; the spec (current upstream code) is followed.
            (old,) = lines[name]
            assert json.loads(old)["description"] == (
                "The API for translating text from source language to target language."
            )
            assert {**json.loads(old), "description": LEVEL_1_2.get(name).description} == LEVEL_1_2.descriptor(name)
            continue
        assert LEVEL_1_2.describe(name) in lines[name], name


@pytest.mark.parametrize("name", MINE)
def test_schema_matches_signature(name):
    cls = LEVEL_1_2.get(name)
    assert list(inspect.signature(cls.run).parameters) == ["self", *cls.input_parameters]
    assert set(cls.defaults) <= set(cls.input_parameters)
    assert cls.module_name == re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


# ------------------------------------------------------------------------------------ gold replays
def test_gold_calls_reproduce_as_the_spec_says(data_dir):
    counts: dict[str, Counter] = {name: Counter() for name in MINE}
    for _, tool, earlier, turn in _gold_calls(data_dir):
        recorded = turn["result"]
        fresh = _execute(data_dir, tool, [], turn)
        replayed = _execute(data_dir, tool, earlier, turn)
        if fresh == recorded:
            assert replayed == recorded, "replaying earlier calls must not break an exact result"
            counts[tool]["fresh"] += 1
        elif replayed == recorded:
            counts[tool]["after_replay"] += 1
        else:
            counts[tool]["not_reproducible"] += 1
        counts[tool]["gold"] += 1
        if not isinstance(replayed, CallRejected):
            # the corrected check accepts every replayed gold call except the stale-data ones
            accepted = LEVEL_1_2.get(tool).check_corrected(replayed, recorded)
            assert accepted == (tool != "QueryScene"), (tool, recorded)
    measured = {
        name: (c["gold"], c["fresh"], c["after_replay"], c["not_reproducible"]) for name, c in counts.items() if c
    }
    assert measured == EXPECTED
    assert sum(v[0] for v in measured.values()) == 181


def test_gold_calls_through_the_paper_protocol(data_dir):
    """The original evaluator path: param_dict text coerced by upstream rules, fresh state, original check."""
    accepted = Counter()
    for _, tool, _, turn in _gold_calls(data_dir):
        session = new_session("level-1-2", data_dir)
        try:
            response = session.call(tool, dict(turn["param_dict"]), coercion="paper")
        except CallRejected:
            continue
        try:
            accepted[tool] += bool(LEVEL_1_2.get(tool).check(response, copy.deepcopy(turn["result"])))
        except KeyError:
            pass
    # spec: 140 of 181, with QueryMeeting and RecordHealthData at 0 (list arguments arrive as text);
    # plus the 4 Translate calls that the offline table answers.
    assert accepted["QueryMeeting"] == accepted["RecordHealthData"] == 0
    assert accepted["RegisterUser"] == 6
    assert sum(accepted.values()) == 144


# ------------------------------------------------------------------------------------ quirks
@pytest.fixture
def session(data_dir):
    return new_session("level-1-2", data_dir)


def _call(session, tool_name, **arguments):
    return session.call(tool_name, arguments, coercion="none")


def test_query_balance_rewrites_token_failures(session):
    assert _call(session, "QueryBalance", token="nope")["exception"] == "The token is incorrect."


def test_query_stock_keeps_integral_prices(session):
    result = _call(session, "QueryStock", stock_code=" tsla ", date="2022-3-8")
    assert result["output"] == 1000 and type(result["output"]) is int


def test_open_bank_account_keys_skip_one(session):
    assert _call(session, "OpenBankAccount", account="test", password="x", name="y")["output"] == "failed"
    assert _call(session, "OpenBankAccount", account="a1", password="x", name="y")["output"] == "success"
    assert list(session.tool("OpenBankAccount").accounts) == [0, 2]


def test_date_messages_and_history_filter(session):
    bad = _call(session, "QueryHistoryToday", date="April 21")
    assert bad["exception"] == "time data 'April 21' does not match format '%m-%d'"
    assert _call(session, "QueryHistoryToday", date="02-29")["exception"] == "day is out of range for month"
    assert _call(session, "QueryHistoryToday", date="4-21")["input"] == {"date": "4-21"}
    both = _call(session, "QueryHealthData", user_id="a", start_time="x", end_time="y")["exception"]
    assert both == (
        "time data 'x' does not match format '%Y-%m-%d %H:%M:%S'; time data 'y' does not match format '%Y-%m-%d %H:%M:%S'"
    )


def test_record_then_query_health_data_share_state(session):
    recorded = _call(
        session, "RecordHealthData", user_id=" new1 ", time="2023-1-2 03:04:05",
        health_data=[{"name": "heart_rate", "value": "80"}],
    )
    assert recorded["output"] == "success"
    found = _call(session, "QueryHealthData", user_id="NEW1", start_time="2023-01-01 00:00:00", end_time="2023-01-03 00:00:00")
    assert found["output"] == [{"time": "2023-01-02 03:04:05", "heart_rate": "80"}]
    as_text = session.call("RecordHealthData", {"user_id": "a", "time": "2023-01-02 03:04:05", "health_data": "[{'name': 'x'}]"})
    assert as_text["exception"] == "The health data has invalid format."
    missing = _call(session, "RecordHealthData", user_id="new2", time="2023-01-02 03:04:05", health_data=[{"name": "x"}])
    assert missing["exception"] == "'value'"
    assert session.store("HealthData", writable=False)["NEW2"] == []


def test_modify_scene_rewrites_the_caller_devices(session):
    devices = [{"name": " Lamp ", "description": " d "}, {"name": "Blinds", "description": "b"}]
    result = _call(session, "ModifyScene", name="No Such Scene", devices=devices)
    assert result["exception"] == "The scene does not exist."
    assert result["input"]["devices"] == [{"name": "blinds", "description": "b"}, {"name": "lamp", "description": "d"}]
    text = session.call("ModifyScene", {"name": "x", "devices": ""})
    assert text["exception"] == "'str' object has no attribute 'sort'"
    gold = copy.deepcopy(result)
    gold["input"]["devices"] = "[]"
    with pytest.raises(TypeError):
        LEVEL_1_2.get("ModifyScene").check(copy.deepcopy(result), gold)
    assert LEVEL_1_2.get("ModifyScene").check_corrected(result, gold) is False


def test_register_user_token_is_seeded_and_adoptable(data_dir):
    first, second = (new_session("level-1-2", data_dir, seed=7) for _ in range(2))
    made = [_call(s, "RegisterUser", username="u", password="p", email="e") for s in (first, second)]
    assert made[0] == made[1] and "api_name" not in made[0]
    assert re.fullmatch(r"[a-z0-9]{18}", made[0]["output"]["token"])
    recorded = {"input": made[0]["input"], "output": {"token": "r" * 32}, "exception": None}
    first.tool("RegisterUser").adopt(made[0], recorded)
    assert _call(first, "CheckToken", token="r" * 32)["output"] == {"username": "u"}
    again = _call(first, "RegisterUser", username="u", password="p", email="e")
    assert again["exception"] == "The username already exists."
    assert LEVEL_1_2.get("RegisterUser").check(made[0], {**again, "output": None}) is False


def test_checks_with_upstream_crashes():
    meeting = LEVEL_1_2.get("QueryMeeting")
    response = {"input": {"meeting_topic": "a b", "token": "t"}, "output": None, "exception": "x"}
    gold = copy.deepcopy(response)
    assert meeting.check_corrected(response, gold) is True and "meeting_topic" in response["input"]
    assert meeting.check(response, gold) is True and "meeting_topic" not in response["input"]

    symptom = LEVEL_1_2.get("SymptomSearch")
    empty = {"api_name": "SymptomSearch", "input": {"symptom": " "}, "output": None, "exception": "e"}
    with pytest.raises(Exception, match="The symptom cannot be empty."):
        symptom.check(empty, copy.deepcopy(empty))
    assert symptom.check_corrected(empty, copy.deepcopy(empty)) is True

    search = LEVEL_1_2.get("SearchEngine")
    failed = {"api_name": "SearchEngine", "input": {"keyword": 1}, "output": None, "exception": "e"}
    with pytest.raises(UnboundLocalError):
        search.check(failed, copy.deepcopy(failed))
    assert search.check_corrected(failed, copy.deepcopy(failed)) is True

    reminder = LEVEL_1_2.get("ModifyReminder")
    other = {"api_name": "QueryReminder", "input": {"content": "a", "time": "t"}, "output": None, "exception": None}
    with pytest.raises(AssertionError, match="The API name is not correct."):
        reminder.check({**other, "api_name": "ModifyReminder"}, other)


def test_send_email_receiver_rule(session):
    def status(receiver):
        return _call(session, "SendEmail", receiver=receiver, subject="s", content="c")["exception"]

    assert status(" ab@example.com ") is None
    assert status("a.b@exa_mple.org") is None
    for bad in ("a@example.com", "Ab@example.com", "ab@mail.example.com", "ab@example.info"):
        assert status(bad) == "Email address of the receiver is invalid."


# ------------------------------------------------------------------------------------ offline tools
def test_translate_answers_from_recorded_data_only(session):
    assert language_code("Malayalam") == "ms"
    assert language_code("english/en") == "en"
    assert language_code("Chinese Traditional") == "zh-tw"
    hello = session.call("Translate", {"tgt_lang": "French", "src": "hello"}, coercion="none")
    assert hello["input"] == {"src": "hello", "tgt_lang": "French"}
    assert hello["output"] == "Bonjour"
    explicit = _call(session, "Translate", src="hello", src_lang="en", tgt_lang="fr")
    assert list(explicit["input"]) == ["src", "src_lang", "tgt_lang"] and explicit["output"] == "Bonjour"
    unknown = _call(session, "Translate", src="good night", tgt_lang="fr")
    assert unknown["output"] is None and "recorded translations" in unknown["exception"]
    assert _call(session, "Translate", src="x", tgt_lang="klingon")["exception"] == "Language not supported."


def test_search_engine_tokenizer_reproduces_shipped_tokens(data_dir):
    data = json.loads((data_dir / "init_database" / "SearchEngine.json").read_text("utf-8"))
    for raw, tokens in zip(data["raw_documents"], data["tokenized_documents"]):
        assert treebank_tokens(f"{raw['title']} - {raw['abstract']}".lower()) == tokens


TOKENIZER_CASES = [
    'Hello, "world" (it\'s) 1,000 $5 ... ok?! don\'t cannot \'quoted\' end.',
    "What's up? I can't go with dr. smith and u.s. staff.",
    "dogs' toys at 10:30; yes -- [a] {b} <c> gonna wanna gotta",
    "the sustainable development",
    "",
    "'em 'tis 'nice 'sure 're's 'x '90s ''x ' x rock 'n' roll",
    "it is 'done.'", 'he said "end."', "(see this.)", "''x ''y",
    "o'neil's car, don't we'd've c'mon $100 #1 @me 50% a&b a<b>c 1:2 a: b hi...there [x](y){z}",
]


@pytest.mark.parametrize("text", TOKENIZER_CASES)
def test_search_engine_tokenizer_agrees_with_nltk_word_splitter(text):
    """NLTK's splitter changed its rules for quotes and clitics in 3.10.1 ("'em", "'done.'"): the tokenizer
    follows 3.10.1 and later (the shipped tokens, the real reference, are checked above whatever NLTK is
    installed; lighteval pins 3.9.1)."""
    nltk = pytest.importorskip("nltk")
    from packaging.version import Version

    if Version(nltk.__version__) < Version("3.10.1"):
        pytest.skip(f"nltk {nltk.__version__} splits quotes and clitics by its pre-3.10.1 rules")
    nltk_tokenize = pytest.importorskip("nltk.tokenize")
    assert treebank_tokens(text) == nltk_tokenize.NLTKWordTokenizer().tokenize(text)


def test_search_engine_tokenizer_splits_sentences_like_punkt():
    # NLTK's word splitter alone keeps a sentence-internal period; word_tokenize (Punkt first) splits it.
    assert treebank_tokens("i can't go. dr. smith met e.g. j. doe.") == [
        "i", "ca", "n't", "go", ".", "dr.", "smith", "met", "e.g.", "j.", "doe", "."
    ]


def test_search_engine_ranking(session, data_dir):
    data = json.loads((data_dir / "init_database" / "SearchEngine.json").read_text("utf-8"))
    index = Bm25(data["tokenized_documents"])
    rank_bm25 = pytest.importorskip("rank_bm25")
    reference = rank_bm25.BM25Okapi(data["tokenized_documents"])
    for query in ["artificial intelligence", "the sustainable development", "mental health ?", "zzz"]:
        assert index.scores(treebank_tokens(query)) == list(reference.get_scores(treebank_tokens(query)))
    # all-zero scores keep document order
    assert [d["title"] for d in _call(session, "SearchEngine", keyword="")["output"]] == [
        data["raw_documents"][0]["title"], data["raw_documents"][1]["title"]
    ]
    # the shipped sample queries list the two results upstream returned (in either order)
    for query, expected in data["sample_queries"].items():
        got = _call(session, "SearchEngine", keyword=query)
        assert LEVEL_1_2.get("SearchEngine").check_corrected(got, {**got, "output": expected}), query
