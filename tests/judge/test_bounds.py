"""Hard bounds of judging (issue 10): deadlines and memory limits that hold from any thread and for work
in C, the caller's signals left alone, the ToolSearcher model ready before any clock, verified data,
data-error and fidelity categories, and the integrity of predictions and output files."""

from __future__ import annotations

import json
import math
import random
import shutil
import signal
import threading
import time

import pytest

from apibank import score
from apibank.data import upstream
from apibank.data.rows import iter_rows
from apibank.files import atomic_write_text, json_line, json_safe
from apibank.generate.predictions import PredictionsFileError, PredictionWriter, read_predictions, repair
from apibank.judge.categories import MEMORY_LIMIT, TIMEOUT
from apibank.judge.retriever import CachedRetriever
from apibank.judge.worker import Overrun, Step, run_steps
from apibank_tools.errors import EnvironmentUnavailable, UpstreamDataError
from support.endless import ENDLESS_PREDICTION, endless_receiver_check  # noqa: F401 (a fixture)



@pytest.fixture(scope="module")
def rows(data_dir):
    return {row["id"]: row for level in ("level-1", "level-2", "level-3") for row in iter_rows(level, data_dir)}


def _categories(result):
    return {d["protocol"]: d["category"] for d in result["details"]}


@pytest.mark.parametrize("in_thread", [False, True], ids=["main thread", "worker thread"])
def test_deadline_stops_work_in_c_from_any_thread(rows, data_dir, in_thread, endless_receiver_check):
    row = rows["level-1/SendEmail-level-1-1#0"]
    box = {}

    def run():
        box["result"] = score([ENDLESS_PREDICTION], [row["reference"]], return_details=True, data_dir=data_dir,
                              timeout=0.3, protocols=["paper"])

    if in_thread:
        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
    else:
        run()
    assert _categories(box["result"]) == {"paper": "TIMEOUT"}
    assert box["result"]["paper"]["level-1"]["errors"] == {"TIMEOUT": 1}


def test_caller_signals_and_timers_are_left_alone(rows, data_dir, endless_receiver_check):
    row = rows["level-1/SendEmail-level-1-1#0"]
    fired = []

    def handler(signum, frame):
        fired.append(signum)

    previous = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 30.0)
        result = score([row["expected_output"], ENDLESS_PREDICTION], [row["reference"]] * 2, data_dir=data_dir, timeout=0.2)
        assert signal.getsignal(signal.SIGALRM) is handler
        remaining, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < remaining <= 30.0
        assert result["paper"]["level-1"]["errors"] == {"TIMEOUT": 1}
        score([row["expected_output"]], [row["reference"]], data_dir=data_dir, timeout=math.inf)
        assert signal.getsignal(signal.SIGALRM) is handler
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert fired == []


@pytest.mark.parametrize("bad", [0, -1, math.nan, -math.inf, "2", True, [2]])
def test_an_invalid_timeout_is_a_clear_error(rows, data_dir, bad):
    row = rows["level-1/SendEmail-level-1-1#0"]
    with pytest.raises((ValueError, TypeError), match="timeout"):
        score([row["expected_output"]], [row["reference"]], data_dir=data_dir, timeout=bad)


def test_no_time_limit_is_none_or_inf(rows, data_dir):
    row = rows["level-1/SendEmail-level-1-1#0"]
    for timeout in (None, math.inf, 5):
        assert score([row["expected_output"]], [row["reference"]], data_dir=data_dir, timeout=timeout)["paper"][
            "level-1"]["api"]["correct"] == 1


def test_a_very_long_time_limit_is_valid(rows, data_dir):
    """Any positive deadline is valid; one longer than the system's longest single wait is waited in parts."""
    row = rows["level-1/SendEmail-level-1-1#0"]
    for timeout in (1e12, 1.7e308):
        assert score([row["expected_output"]], [row["reference"]], data_dir=data_dir, timeout=timeout)["paper"][
            "level-1"]["api"]["correct"] == 1


def test_a_long_wait_is_waited_in_parts(monkeypatch):
    from apibank.judge import worker

    class Quiet:
        waits: list[float] = []

        def poll(self, seconds):
            self.waits.append(seconds)
            return False

    monkeypatch.setattr(worker, "LONGEST_WAIT_S", 0.05)
    quiet = Quiet()
    assert worker._wait(quiet, 0.12) is False
    assert len(quiet.waits) >= 3 and max(quiet.waits) <= 0.05


def _grab(payload, state):
    if payload == "allocate":
        block = bytearray(3 * 1024**3)  # beyond the cap: MemoryError in the worker
        return len(block), state
    if payload == "abort":
        import faulthandler
        import os

        faulthandler.disable()  # keep pytest's crash report out of the log
        os.abort()  # a crash in C code
    if payload == "spin":
        while True:
            pass
    state = (state or 0) + 1
    return ("ok", state), state


def test_memory_limit_and_crashes_are_overruns_and_the_run_goes_on():
    steps = [Step("g", "a"), Step("g", "allocate"), Step("g", "b"), Step("h", "abort"), Step("h", "c"),
             Step("i", "spin"), Step("i", "d")]
    results = run_steps(steps, _grab, timeout=1.0, memory_mb=256)
    assert results[0] == ("ok", 1)
    assert isinstance(results[1], Overrun) and results[1].kind == MEMORY_LIMIT
    assert results[2] == ("ok", 2)  # the group's state carried past the overrun step
    assert isinstance(results[3], Overrun) and results[3].kind == MEMORY_LIMIT
    assert results[4] == ("ok", 1)
    assert isinstance(results[5], Overrun) and results[5].kind == TIMEOUT
    assert results[6] == ("ok", 1)


class _SlowToLoad:
    """A retriever whose catalogue embedding takes longer than the sample time limit."""

    model_id = "slow"

    def __init__(self):
        from apibank_tools.retrieval import default_retriever

        self.inner = default_retriever()
        self.loaded = False

    def document_embeddings(self, documents):
        if not self.loaded:
            time.sleep(1.0)
            self.loaded = True
        return self.inner.document_embeddings(documents)

    def best(self, keywords, documents):
        assert self.loaded, "the catalogue must be embedded before judging"
        return self.inner.best(keywords, documents)

    def scores(self, keywords, documents):
        return self.inner.scores(keywords, documents)


def test_the_toolsearcher_model_is_ready_before_any_clock(rows, data_dir):
    row = rows["level-2/AddAgenda-level-3-1#0"]
    result = score([row["expected_output"]], [row["reference"]], return_details=True, data_dir=data_dir,
                   retriever=CachedRetriever(_SlowToLoad()), timeout=0.5)
    assert _categories(result) == {"paper": "OUTPUT_MISMATCH", "corrected": None}


def test_a_model_that_cannot_load_is_one_clear_error(rows, data_dir, monkeypatch):
    monkeypatch.setenv("APIBANK_RETRIEVER", "no-such-backend")
    searcher = rows["level-2/AddAgenda-level-3-1#0"]
    with pytest.raises(EnvironmentUnavailable, match="no-such-backend"):
        score([searcher["expected_output"]], [searcher["reference"]], data_dir=data_dir)
    # rows that never reach ToolSearcher do not need the model
    plain = rows["level-1/SendEmail-level-1-1#0"]
    assert score([plain["expected_output"]], [plain["reference"]], data_dir=data_dir)["corrected"]["level-1"]["api"][
        "correct"] == 1


def test_rouge_mean_does_not_depend_on_row_order(rows, data_dir):
    responses = [row for row in rows.values() if row["kind"] == "response"][:200]
    generator = random.Random(7)
    predictions = [" ".join(generator.sample(row["expected_output"].split() or ["x"], k=1) * 3) for row in responses]
    means = set()
    for seed in range(5):
        order = list(range(len(responses)))
        random.Random(seed).shuffle(order)
        result = score([predictions[i] for i in order], [responses[i]["reference"] for i in order])
        means.add((result["paper"]["overall"]["response"]["rouge_l"],
                   result["paper"]["overall"]["response"]["rouge_l_rougescore"]))
    assert len(means) == 1


def test_a_failing_gold_call_never_makes_a_wrong_prediction_correct(rows, data_dir):
    """CancelTimedSwitch's recorded device was renamed: the gold call fails in the replayed state."""
    row = rows["level-1/CancelTimedSwitch-level-1-1#0"]
    wrong = row["expected_output"].replace("10000025", "10000026")
    assert wrong != row["expected_output"]
    result = score([row["expected_output"], wrong], [row["reference"]] * 2, return_details=True,
                   data_dir=data_dir, protocols=["corrected"])
    gold, other = result["details"]
    assert gold["verdict"] is True  # the very call the annotation asks for
    assert other["verdict"] is False and other["category"] == "GOLD_CALL_FAILED"
    assert result["corrected"]["level-1"]["errors"] == {"GOLD_CALL_FAILED": 1}


def _copy_databases(data_dir, target):
    shutil.copytree(data_dir / "init_database", target / "init_database")
    return target


@pytest.mark.parametrize("damage", ["token changed", "truncated", "grown", "emptied"])
def test_a_damaged_local_copy_is_an_error_naming_the_file(rows, data_dir, tmp_path, damage):
    copy = _copy_databases(data_dir, tmp_path / "copy")
    path = copy / "init_database" / "Account.json"
    content = path.read_bytes()
    if damage == "token changed":
        changed = content.replace(b"a9s8d7f6g5h4j3k2l1", b"a9s8d7f6g5h4j3k2l2", 1)
    elif damage == "truncated":
        changed = content[: len(content) // 2]
    elif damage == "grown":
        changed = content + b" "
    else:
        changed = b""
    assert changed != content
    path.write_bytes(changed)
    row = rows["level-1/AddAgenda-AddMeeting-GetUserToken-level-2-2#2"]
    with pytest.raises(UpstreamDataError, match="init_database/Account.json"):
        score([row["expected_output"]], [row["reference"]], data_dir=copy)


def test_predictions_file_errors_give_line_numbers(tmp_path):
    path = tmp_path / "predictions.jsonl"
    path.write_text('{"id": "a", "prediction": "x"}\n{"id": "b", "prediction": "y"}\n{"id": "a", "prediction": "z"}\n')
    with pytest.raises(PredictionsFileError, match=r"predictions.jsonl:3: duplicate id 'a' \(first at line 1\)"):
        read_predictions(path)
    path.write_text('{"id": "a", "prediction": "x"}\n{"id": "b", "predic')
    with pytest.raises(PredictionsFileError, match=r"predictions.jsonl:2: a torn last line"):
        read_predictions(path)
    assert [r["id"] for r in repair(path)] == ["a"]  # resuming a run drops the torn tail
    assert read_predictions(path) == [{"id": "a", "prediction": "x"}]
    path.write_text('{"id": "a", "prediction": "x"}\n{"id": \n{"id": "b", "prediction": "y"}\n')
    with pytest.raises(PredictionsFileError, match=r":2: not a JSON line"):
        read_predictions(path)
    path.write_text('{"id": "a", "prediction": 3}\n')
    with pytest.raises(PredictionsFileError, match=r":1: `prediction` of 'a' is not a string"):
        read_predictions(path)


def test_predictions_with_lone_surrogates_round_trip(tmp_path):
    path = tmp_path / "predictions.jsonl"
    records = [{"id": f"r{i}", "prediction": text} for i, text in enumerate(["\ud800", "a\udfffb", "ok é", "\x00"])]
    with PredictionWriter(path) as writer:
        writer.write(records[:2])
        writer.write(records[2:])
    assert read_predictions(path) == records
    path.read_bytes().decode("utf-8")  # the file is valid UTF-8


def test_strict_json_and_atomic_writes(tmp_path):
    value = {"a": math.inf, "b": [math.nan, {(1, 2): {1, 2}}], "c": b"x", "d": 1j, 5: "five"}
    line = json_line(json_safe(value))
    assert json.loads(line, parse_constant=lambda name: pytest.fail(name)) == {
        "a": "inf", "b": ["nan", {"(1, 2)": [1, 2]}], "c": "b'x'", "d": "1j", "5": "five"}
    deep = []
    for _ in range(10_000):
        deep = [deep]
    json.loads(json_line(json_safe(deep)))
    target = tmp_path / "results.json"
    atomic_write_text(target, "old")
    with pytest.raises(RuntimeError):
        from apibank.files import atomic_writer

        with atomic_writer(target) as handle:
            handle.write("new, half written")
            raise RuntimeError("crash")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def _predictions_file(folder, rows, ids, model, mutate=lambda text: text):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "predictions.jsonl"
    with PredictionWriter(path) as writer:
        writer.write([{"id": i, "prediction": mutate(rows[i]["expected_output"]), "model": model} for i in ids])
    return path


def test_score_output_refuses_another_models_folder(rows, data_dir, tmp_path, capsys):
    from apibank.cli.main import main

    ids = ["level-1/SendEmail-level-1-1#0", "level-1/Calculator-level-1-1#0"]
    mine = _predictions_file(tmp_path / "a", rows, ids, "model-a")
    theirs = _predictions_file(tmp_path / "b", rows, ids, "model-b", mutate=lambda text: text + " ")
    before = theirs.read_bytes()
    assert main(["score", str(mine), "--output", str(tmp_path / "b"), "--data-dir", str(data_dir)]) == 2
    assert "holds other predictions" in capsys.readouterr().err
    assert theirs.read_bytes() == before and not (tmp_path / "b" / "results.json").exists()
    # a fresh folder is fine, and details are strict JSON even for non-finite literals
    hostile = _predictions_file(tmp_path / "c", rows, ids, "model-c",
                                mutate=lambda text: "[Calculator(formula=1e999)] [SendEmail(receiver={(1,2): {3}})]")
    assert main(["score", str(hostile), "--output", str(tmp_path / "d"), "--data-dir", str(data_dir)]) == 0
    for line in (tmp_path / "d" / "details.jsonl").read_text().splitlines():
        json.loads(line, parse_constant=lambda name: pytest.fail(f"non-strict JSON: {name}"))
    json.loads((tmp_path / "d" / "results.json").read_text(), parse_constant=lambda name: pytest.fail(name))


def test_download_failures_are_upstream_data_errors(tmp_path, monkeypatch):
    """Every way a mirror can fail is an UpstreamDataError (more shapes in the hostile corpus)."""
    monkeypatch.delenv(upstream.DATA_DIR_ENV, raising=False)
    monkeypatch.setenv(upstream.BASE_URL_ENV, "http://127.0.0.1:9")
    with pytest.raises(UpstreamDataError, match="could not download"):
        upstream.fetch("init_database/Bank.json", cache_dir=tmp_path, deadline=1.0)


def _score_in_pool_worker(reference_and_prediction):
    prediction, reference, data_dir = reference_and_prediction
    return score([prediction], [reference], data_dir=data_dir)["paper"]["level-1"]["api"]["correct"]


def test_scoring_works_inside_a_daemonic_pool_worker(rows, data_dir):
    """The judging worker is a plain fork, so a multiprocessing pool worker may score too."""
    import multiprocessing

    row = rows["level-1/SendEmail-level-1-1#0"]
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.map(_score_in_pool_worker, [(row["expected_output"], row["reference"], str(data_dir))]) == [1]


def test_a_lock_held_by_another_thread_at_the_fork_does_not_stall_the_worker(rows, data_dir):
    from apibank.judge.retriever import shared_retriever

    row = rows["level-2/AddAgenda-level-3-1#0"]
    score([row["expected_output"]], [row["reference"]], data_dir=data_dir)  # model and catalogues loaded
    backend = shared_retriever().inner.backend
    held, release = threading.Event(), threading.Event()

    def hold():
        with backend._lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    try:
        prediction = "API-Request: [ToolSearcher(keywords='a keyword phrase never embedded before 41')]"
        result = score([prediction], [row["reference"]], return_details=True, data_dir=data_dir, timeout=5)
    finally:
        release.set()
        holder.join()
    assert "TIMEOUT" not in _categories(result).values()


def test_long_keywords_are_tokenised_from_a_prefix_with_the_same_tokens():
    """ToolSearcher reads 128 tokens; a 10 MB keyword text costs no more than its first 4,096 characters."""
    from apibank_tools.retrieval import PREFIX_CHARS, default_retriever

    backend = default_retriever().backend
    generator = random.Random(3)
    words = ["Query", "meeting", "é", "x" * 120, "日本", "a.b", "\u0301", " ", "\t", "foo-bar", "Ñ", "\u2028"]
    for _ in range(20):
        text = "".join(generator.choice(words) + (" " if generator.random() < 0.7 else "")
                       for _ in range(generator.randint(300, 3000)))
        assert len(text) > PREFIX_CHARS
        assert backend._encode(text).ids == backend._tokenizer.encode(text).ids
    assert len(backend._encode("QueryMeeting " * 1_000_000).ids) == 128
