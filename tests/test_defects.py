"""Defects found while reworking the command line, one test each, named after the defect."""

from __future__ import annotations

import http.server
import json
import re
import threading
import time
from pathlib import Path

import pytest

from apibank.cli.main import main
from apibank.data import upstream
from apibank.data.rows import iter_rows
from apibank.data.upstream import UpstreamDataError
from apibank.generate.predictions import PredictionsFileError, read_predictions
from apibank.judge.references import ReferenceError
from apibank.judge.scoring import score

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def rows(data_dir):
    return {config: list(iter_rows(config, data_dir)) for config in ("level-1", "level-2", "level-3")}


def _oracle_line(row) -> str:
    return json.dumps({"id": row["id"], "prediction": row["expected_output"], "model": "oracle", "format": "paper"})


def test_score_on_a_partial_predictions_file_writes_the_report_and_plots(rows, data_dir, tmp_path, capsys):
    """A partial file (as the first lines of an oracle run) can hold a level's responses but none of its API
    calls: that level has no API-call accuracy, which the report's plot multiplied by 100."""
    picked = [r for r in rows["level-1"] if r["kind"] == "api"][:3]
    picked += [r for r in rows["level-2"] if r["kind"] == "response"][:2]
    predictions = tmp_path / "partial.jsonl"
    predictions.write_text("".join(_oracle_line(row) + "\n" for row in picked), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["score", str(predictions), "--data-dir", str(data_dir), "--output", str(out)]) == 0, \
        capsys.readouterr().err
    results = json.loads((out / "results.json").read_text())
    assert results["scores"]["paper"]["level-2"]["api"]["accuracy"] is None
    for name in ("report.md", "per_level_accuracy.png", "error_categories.png", "api_error_rates.png"):
        assert (out / name).is_file(), name


def test_a_large_positive_timeout_is_valid(rows, data_dir):
    row = next(r for r in rows["level-1"] if r["kind"] == "api")
    for timeout in (1e12, 1e300):
        result = score([row["expected_output"]], [row["reference"]], timeout=timeout, data_dir=data_dir)
        assert result["paper"]["level-1"]["api"]["correct"] == 1
        assert result["corrected"]["level-1"]["api"]["correct"] == 1


def test_metric_compute_takes_a_set_of_protocols(rows, data_dir):
    import evaluate

    metric = evaluate.load(str(REPO / "apibank_metric.py"))
    row = next(r for r in rows["level-1"] if r["kind"] == "api")
    results = metric.compute(predictions=[row["expected_output"]], references=[row["reference"]], protocols={"paper"},
                             data_dir=str(data_dir))
    assert results["paper_api_accuracy"] == 1.0 and "corrected" not in results
    both = metric.compute(predictions=[row["expected_output"]], references=[row["reference"]],
                          protocols={"corrected", "paper"}, return_details=True, data_dir=str(data_dir))
    assert list(both["protocols"]) == ["paper", "corrected"]  # a set is taken in the usual order
    assert [d["protocol"] for d in both["details"]] == ["paper", "corrected"]


def test_a_predictions_file_with_a_utf8_bom_is_read(rows, tmp_path):
    row = rows["level-1"][0]
    path = tmp_path / "predictions.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + (_oracle_line(row) + "\n").encode())
    assert [record["id"] for record in read_predictions(path)] == [row["id"]]


def test_a_complete_last_line_that_is_not_json_is_not_called_torn(rows, tmp_path):
    path = tmp_path / "predictions.jsonl"
    path.write_text(_oracle_line(rows["level-1"][0]) + "\nnot json\n", encoding="utf-8")
    for allow_torn_tail in (False, True):  # a resumed run must not drop it silently either
        with pytest.raises(PredictionsFileError, match=r":2: not a JSON line \(Expecting value at column 1\)$"):  # with the reason
            read_predictions(path, allow_torn_tail=allow_torn_tail)
    path.write_text(_oracle_line(rows["level-1"][0]) + "\n{\"id\": \"level-1/x", encoding="utf-8")
    with pytest.raises(PredictionsFileError, match=r":2: a torn last line"):
        read_predictions(path)


def test_resuming_after_a_torn_line_counts_the_predictions_kept(rows, tmp_path, capsys):
    from apibank.cli.checks import check_resume

    complete = [row for config in ("level-1", "level-2") for row in rows[config]][:503]
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(_oracle_line(row) + "\n" for row in complete) + '{"id": "level-3/', encoding="utf-8")
    assert check_resume(tmp_path, fmt="paper", model="oracle") == 503
    assert len(read_predictions(path, allow_torn_tail=True)) == 503


class _Trickle(http.server.BaseHTTPRequestHandler):
    """Answers with one byte every 50 ms: each read is quick, the whole transfer never ends."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        try:
            for _ in range(400):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args) -> None:
        pass


def test_the_download_deadline_is_five_times_the_timeout(tmp_path, monkeypatch):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.delenv(upstream.DATA_DIR_ENV, raising=False)
    monkeypatch.setenv(upstream.BASE_URL_ENV, f"http://127.0.0.1:{server.server_address[1]}")
    try:  # the trickle would take 20 s; the message says the 1 s deadline ended it
        with pytest.raises(UpstreamDataError, match=r"not complete within 1 s"):
            upstream.fetch("init_database/Bank.json", cache_dir=tmp_path, timeout=0.2)
    finally:
        server.shutdown()
        server.server_close()


def test_references_sharing_level_file_and_turn_with_different_gold_are_refused(rows, data_dir):
    row = next(r for r in rows["level-1"] if r["kind"] == "api")
    other = json.loads(row["reference"])
    other["id"] = row["id"] + "-copy"
    other["gold"]["result"] = {**other["gold"]["result"], "output": "another gold result"}
    with pytest.raises(ReferenceError, match="share level, file and turn .* different gold calls"):
        score([row["expected_output"]] * 2, [row["reference"], json.dumps(other)], data_dir=data_dir)
    # true duplicates (the same gold) are scored as the paper protocol does
    twice = score([row["expected_output"]] * 2, [row["reference"]] * 2, data_dir=data_dir)
    assert twice["paper"]["level-1"]["api"]["correct"] == 2


def _readme() -> str:
    return (REPO / "README.md").read_text(encoding="utf-8")


def test_readme_offline_inspect_examples_pass_the_data_folder():
    offline = [line for line in _readme().splitlines() if line.startswith("inspect eval") and "offline" in line]
    assert offline
    for line in offline:
        assert "data_dir=" in line, line


def test_readme_tool_count_is_what_apibank_ls_lists(capsys):
    assert main(["ls"]) == 0
    listed = sum(int(n) for n in re.findall(r"^\S+ \((\d+) tools\)$", capsys.readouterr().out, re.M))
    assert listed == 75
    counts = {int(n) for n in re.findall(r"benchmark's (\d+) tools", _readme())}
    assert counts == {listed}
