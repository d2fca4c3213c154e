"""95% intervals: dialogue-cluster bootstrap on real runs, its coverage on simulated clustered data, its speed."""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import pytest

from apibank.cli.main import main
from apibank.judge.intervals import dialogue_of, score_intervals

ROOT = Path(__file__).resolve().parents[2]
NEW_KEYS = {"ci95", "n", "clusters", "error_types"}


def _bench():
    spec = importlib.util.spec_from_file_location("bench_intervals", ROOT / "benchmarks" / "bench_intervals.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory, data_dir) -> Path:
    output = tmp_path_factory.mktemp("runs") / "oracle"
    assert main(["evaluate", "--model", "oracle", "--data-dir", str(data_dir), "--output", str(output),
                 "--dataset-id", "test/api-bank", "--no-progress"]) == 0
    return output


def _plain(value):
    """``value`` without the keys the report layer adds."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in NEW_KEYS}
    return value


def test_every_score_of_a_real_run_carries_an_interval_and_n(oracle_run):
    results = json.loads((oracle_run / "results.json").read_text())
    for protocol in ("paper", "corrected"):
        for level in ("level-1", "level-2", "level-3", "overall"):
            block = results["scores"][protocol][level]
            api = block["api"]
            assert api["n"] == api["total"]
            low, high = api["ci95"]
            assert 0 <= low <= api["accuracy"] <= high <= 1
            response = block["response"]
            assert response["n"] == response["count"]
            assert response["ci95"][0] <= response["rouge_l"] + 1e-12 and response["rouge_l"] <= response["ci95"][1] + 1e-12
    paper = results["scores"]["paper"]
    # the oracle's paper-protocol errors give real width; level 2 has 49 dialogues, so it is the widest
    assert paper["level-1"]["api"]["clusters"] == 212 and paper["level-2"]["api"]["clusters"] == 49
    widths = {level: paper[level]["api"]["ci95"][1] - paper[level]["api"]["ci95"][0] for level in ("level-1", "level-2")}
    assert 0.03 < widths["level-1"] < widths["level-2"] < 0.25
    assert paper["level-3"]["dialogues"]["ci95"] == pytest.approx([0.68, 0.9])
    # no error at all: every resample is identical
    assert results["scores"]["corrected"]["level-1"]["api"]["ci95"] == [1.0, 1.0]


def test_intervals_are_reproducible_fast_and_change_no_existing_value(oracle_run):
    results = json.loads((oracle_run / "results.json").read_text())
    details = [json.loads(line) for line in (oracle_run / "details.jsonl").read_text().splitlines()]
    plain = _plain(results["scores"])
    started = time.process_time()  # CPU time: the machine's load does not count
    again = score_intervals(plain, details)
    elapsed = time.process_time() - started
    assert elapsed < 1.0, f"all intervals of a full run took {elapsed:.2f} s of CPU time"
    assert _plain(again) == plain  # existing values untouched
    for protocol in ("paper", "corrected"):
        for level in ("level-1", "level-2", "level-3", "overall"):
            assert again[protocol][level]["api"]["ci95"] == results["scores"][protocol][level]["api"]["ci95"]


def test_table_and_report_show_intervals_but_hub_files_keep_plain_values(oracle_run, capsys):
    report = (oracle_run / "report.md").read_text()
    assert "| paper | API call accuracy | 86.97% [" in report
    card = (oracle_run / "leaderboard" / "model" / "README.md").read_text()
    assert "| paper | API call accuracy | 86.97% (347/399) |" in card
    for path in (oracle_run / "leaderboard").rglob("*.yaml"):
        assert "ci95" not in path.read_text()
    from apibank.pipeline import results_table

    table = results_table(json.loads((oracle_run / "results.json").read_text()))
    assert "86.97% [83." in table and "100.00% [100.00, 100.00] (399/399)" in table


def test_dialogue_of_strips_the_sample_suffix():
    assert dialogue_of("level-1/AddAgenda-AddAlarm-GetUserToken-level-2-1#4") == "level-1/AddAgenda-AddAlarm-GetUserToken-level-2-1"
    assert dialogue_of("level-3/7#response") == "level-3/7"


def test_coverage_on_simulated_clustered_data(data_dir):
    """Real level-3 dialogue sizes (245 calls in 50 dialogues), correlated verdicts within a dialogue:
    the cluster interval covers the true accuracy near 95%; a row-level bootstrap falls well short."""
    bench = _bench()
    sizes = bench.dialogue_sizes("level-3", data_dir)
    assert (len(sizes), sum(sizes)) == (50, 245)
    result = bench.simulate_coverage(sizes, p=0.8, icc=0.3, runs=300, resamples=1000, seed=1)
    assert 0.90 <= result["coverage_cluster"] <= 0.99, result
    assert result["coverage_rows"] < result["coverage_cluster"] - 0.05, result
    assert result["width_cluster"] > result["width_rows"]


def test_agentic_summary_has_intervals_over_episodes(tmp_path, data_dir, capsys):
    output = tmp_path / "agent"
    assert main(["agent", "--model", "oracle", "--levels", "level-3", "--data-dir", str(data_dir),
                 "--output", str(output), "--dataset-id", "org/API-Bank"]) == 0
    summary = json.loads((output / "results.json").read_text())["levels"]["level-3"]
    assert summary["ci95"]["success_rate"] == [1.0, 1.0]
    assert set(summary["ci95"]) == {"success_rate", "pass_k", "pass_at_k", "response_rouge_l"}
    assert "100.00% [100.00, 100.00] (50/50)" in capsys.readouterr().out
    (result_file,) = (output / "leaderboard" / "model" / ".eval_results").glob("api-bank-agentic*.yaml")
    yaml_text = result_file.read_text()
    assert "ci95" not in yaml_text


ONE_DIALOGUE = "level-1/AddAgenda-AddAlarm-GetUserToken-level-2-1"


@pytest.fixture(scope="module")
def one_dialogue_run(oracle_run, tmp_path_factory, data_dir) -> Path:
    """``apibank score`` of one dialogue's rows, its responses answered badly (scores differ per row)."""
    out = tmp_path_factory.mktemp("runs") / "one-dialogue"
    out.mkdir()
    answers = iter(["no idea", "I have added the schedule", "nothing"])
    lines = []
    for line in (oracle_run / "predictions.jsonl").read_text().splitlines():
        record = json.loads(line)
        if dialogue_of(record["id"]) == ONE_DIALOGUE:
            if not record["prediction"].startswith("API-Request"):
                record["prediction"] = next(answers)
            lines.append(json.dumps(record))
    (out / "predictions.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["score", str(out / "predictions.jsonl"), "--data-dir", str(data_dir), "--no-progress"]) == 0
    return out


def test_one_dialogue_has_no_interval_and_says_why(one_dialogue_run, capsys):
    results = json.loads((one_dialogue_run / "results.json").read_text())
    for protocol in ("paper", "corrected"):
        for level, reason in (("level-1", "one dialogue: no interval"), ("overall", "one dialogue: no interval")):
            for kind in ("api", "response"):
                block = results["scores"][protocol][level][kind]
                assert (block["ci95"], block["ci95_reason"], block["clusters"], block["n"]) == (None, reason, 1, 3)
    assert results["scores"]["paper"]["level-1"]["response"]["rouge_l"] not in (0.0, 1.0)  # the rows vary
    from apibank.pipeline import results_table

    # the full scores come first; the verified subset's follow apart (apibank.report.verified)
    table = results_table(results).split("\n\nverified subset")[0]
    assert table.count("[one dialogue: no interval]") == 4 and ", " not in table.split("\n", 3)[3]
    assert "] (n=3)" in table and "[one dialogue: no interval] (3/3)" in table
    report = (one_dialogue_run / "report.md").read_text().split("## Verified subset")[0]
    assert report.count("[one dialogue: no interval]") == 4
    html = (one_dialogue_run / "report.html").read_text()
    assert '"ci95_reason": "one dialogue: no interval"' in html or '"ci95_reason":"one dialogue: no interval"' in html


def test_an_overall_score_with_a_lone_dialogue_in_one_level_has_no_interval():
    details = [{"protocol": "paper", "level": 1, "kind": "api", "id": f"level-1/D{n}#0", "verdict": n % 2 == 0}
               for n in range(20)]
    details.append({"protocol": "paper", "level": 3, "kind": "api", "id": "level-3/7#0", "verdict": True})
    scores = {"paper": {"level-1": {"api": {}}, "level-3": {"api": {}}, "overall": {"api": {}}}}
    paper = score_intervals(scores, details)["paper"]
    low, high = paper["level-1"]["api"]["ci95"]
    assert low < high and "ci95_reason" not in paper["level-1"]["api"]
    assert paper["level-3"]["api"]["ci95"] is None
    assert paper["overall"]["api"] == {"ci95": None, "n": 21, "clusters": 21,
                                       "ci95_reason": "one dialogue in level-3: no interval"}


def test_a_comparison_over_one_dialogue_has_no_interval(one_dialogue_run, capsys):
    assert main(["compare", str(one_dialogue_run), str(one_dialogue_run), "--output",
                 str(one_dialogue_run.parent / "compared")]) == 0
    out = capsys.readouterr().out
    assert out.count("[one dialogue: no interval]") == 4 and "nan" not in out
    compared = json.loads((one_dialogue_run.parent / "compared" / "compare.json").read_text())
    entries = [e for c in compared["comparisons"] for e in c["comparisons"]] if "comparisons" in compared else []
    assert entries and all(e["ci95"] is None and e["ci95_reason"] == "one dialogue: no interval" for e in entries)


def test_agentic_figures_over_one_episode_have_no_interval(tmp_path, data_dir, capsys):
    output = tmp_path / "agent"
    assert main(["agent", "--model", "oracle", "--levels", "level-3", "--limit", "1", "--data-dir", str(data_dir),
                 "--output", str(output)]) == 0
    summary = json.loads((output / "results.json").read_text())["levels"]["level-3"]
    assert set(summary["ci95"].values()) == {None} and summary["ci95_reason"] == "one episode: no interval"
    assert "100.00% [one episode: no interval] (1/1)" in capsys.readouterr().out
