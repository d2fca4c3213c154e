"""``apibank compare`` on real runs: a run with itself, the oracle against a degraded copy, mismatched runs."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from apibank.cli.main import main
from apibank.report.compare import format_p, sign_test, smallest_significant_count

P_VALUE = re.compile(r"p=(\S+)")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, data_dir) -> dict[str, Path]:
    """The oracle run, and the same predictions with every fourth API call replaced by a plain answer."""
    root = tmp_path_factory.mktemp("runs")
    oracle = root / "oracle"
    assert main(["evaluate", "--model", "oracle", "--data-dir", str(data_dir), "--output", str(oracle),
                 "--no-progress"]) == 0
    kinds = {}
    for line in (oracle / "details.jsonl").read_text().splitlines():
        entry = json.loads(line)
        kinds[entry["id"]] = entry["kind"]
    degraded_predictions = root / "degraded.jsonl"
    api_seen = 0
    replaced = []
    with degraded_predictions.open("w") as handle:
        for line in (oracle / "predictions.jsonl").read_text().splitlines():
            record = json.loads(line)
            if kinds[record["id"]] == "api":
                if api_seen % 4 == 0:
                    record["prediction"] = "I cannot help with that."
                    replaced.append(record["id"])
                api_seen += 1
            handle.write(json.dumps(record) + "\n")
    degraded = root / "degraded"
    assert main(["score", str(degraded_predictions), "--data-dir", str(data_dir), "--output", str(degraded)]) == 0
    subset = root / "subset"
    assert main(["evaluate", "--model", "oracle", "--data-dir", str(data_dir), "--output", str(subset), "--limit", "20",
                 "--allow-subset", "--no-progress"]) == 0
    (root / "replaced.json").write_text(json.dumps(replaced))
    return {"oracle": oracle, "degraded": degraded, "subset": subset, "root": root}


def _p_values(text: str) -> list[float]:
    return [float(value) for value in P_VALUE.findall(text)]


def test_a_run_against_itself_differs_by_zero_with_p_one(runs, capsys):
    capsys.readouterr()
    assert main(["compare", str(runs["oracle"]), str(runs["oracle"]), "--output", str(runs["root"] / "self")]) == 0
    out = capsys.readouterr().out
    values = _p_values(out)
    assert len(values) == 14 and set(values) == {1.0}  # 2 protocols x (3 api + 3 response + level-3 dialogues)
    comparison = json.loads((runs["root"] / "self" / "compare.json").read_text())["comparisons"][0]
    for entry in comparison["comparisons"]:
        assert entry["difference"] == 0 and entry["ci95"] == [0.0, 0.0] and entry["p"] == 1.0
    assert (runs["root"] / "self" / "compare.md").read_text().startswith("# API-Bank run comparison")


def test_oracle_against_a_degraded_run_is_significant_at_every_level(runs, capsys):
    capsys.readouterr()
    output = runs["root"] / "degraded-vs-oracle"
    assert main(["compare", str(runs["oracle"]), str(runs["degraded"]), "--json", "--output", str(output)]) == 0
    printed = json.loads(capsys.readouterr().out)
    comparisons = printed["comparisons"][0]["comparisons"]
    api = [entry for entry in comparisons if entry["metric"] in ("api", "dialogue")]
    assert {(e["protocol"], e["level"]) for e in api} == {(p, f"level-{n}") for p in ("paper", "corrected") for n in (1, 2, 3)}
    for entry in api:
        assert entry["p"] < 0.001 and entry["ci95"][1] < 0 and entry["favour_b"] == 0, entry["line"]
        assert f"p={format_p(entry['p'])}" in entry["line"]
        assert abs(entry["difference"]) > entry["mdd"]
    corrected_l1 = next(e for e in api if (e["protocol"], e["level"], e["metric"]) == ("corrected", "level-1", "api"))
    replaced = [i for i in json.loads((runs["root"] / "replaced.json").read_text()) if i.startswith("level-1/")]
    assert corrected_l1["favour_a"] == len(replaced) > 90  # the oracle is right on every call, corrected protocol
    lost = corrected_l1["flipped"]["lost"]
    assert lost["by_category"] == {"NO_API_CALL": len(replaced)}
    assert sum(lost["by_tool"].values()) == len(replaced) and "GetUserToken" in lost["by_tool"]
    dialogues = next(e for e in api if (e["protocol"], e["level"], e["metric"]) == ("corrected", "level-3", "dialogue"))
    assert "-" not in dialogues["flipped"]["lost"]["by_tool"]  # the tool where the dialogue first went wrong
    # responses were not touched
    assert all(e["difference"] == 0 and e["p"] == 1.0 for e in comparisons if e["metric"] == "response")


def test_mismatched_runs_are_refused_unless_allowed(runs, capsys):
    capsys.readouterr()
    assert main(["compare", str(runs["oracle"]), str(runs["subset"])]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "subset: False vs True" in error and "--allow-mismatch" in error
    output = runs["root"] / "subset-vs-oracle"
    assert main(["compare", str(runs["oracle"]), str(runs["subset"]), "--allow-mismatch", "--output", str(output)]) == 0
    out = capsys.readouterr().out
    assert "mismatch (compared anyway): subset: False vs True" in out
    comparison = json.loads((output / "compare.json").read_text())["comparisons"][0]
    assert comparison["mismatch"] and all(e["n"] <= 20 for e in comparison["comparisons"])


def test_an_unrecorded_setting_is_unknown_not_a_difference(runs, tmp_path, data_dir, capsys):
    """A bare predictions file (id and prediction only) scored by ``apibank score`` knows no prompt format:
    compared with the evaluate run of the same rows, that is a note on stderr, not a refusal."""
    bare = tmp_path / "bare"
    bare.mkdir()
    records = [json.loads(line) for line in (runs["oracle"] / "predictions.jsonl").read_text().splitlines()]
    (bare / "predictions.jsonl").write_text("".join(json.dumps({"id": r["id"], "prediction": r["prediction"]}) + "\n"
                                                    for r in records))
    capsys.readouterr()
    assert main(["score", str(bare / "predictions.jsonl"), "--data-dir", str(data_dir), "--quiet"]) == 0
    assert capsys.readouterr().out.startswith("API-Bank: model=unknown format=unknown backend=unknown\n")
    results = json.loads((bare / "results.json").read_text())
    assert (results["format"], results["icl"], results["model"]["backend"]) == (None, None, None)
    assert "| backend | `unknown` |" in (bare / "report.md").read_text()
    assert main(["compare", str(runs["oracle"]), str(bare), "--output", str(tmp_path / "cmp")]) == 0
    captured = capsys.readouterr()
    values = _p_values(captured.out)
    assert len(values) == 14 and set(values) == {1.0} and "B: " + str(bare) + " (unknown)" in captured.out
    notes = captured.err.splitlines()
    assert len(notes) == 2 and all(n.startswith("apibank compare: note: ") for n in notes)
    assert "prompt format not recorded in B (paper vs unknown): compared as unknown, not as different" in notes[0]
    assert "in-context example not recorded in B" in notes[1]
    # a file that says its format records it: then only the in-context example is unknown
    (bare / "predictions.jsonl").write_text("".join(json.dumps({"id": r["id"], "prediction": r["prediction"],
                                                                "format": "paper"}) + "\n" for r in records))
    said = tmp_path / "said"
    assert main(["score", str(bare / "predictions.jsonl"), "--data-dir", str(data_dir), "--output", str(said),
                 "--quiet"]) == 0
    assert json.loads((said / "results.json").read_text())["format"] == "paper"
    capsys.readouterr()
    assert main(["compare", str(runs["oracle"]), str(said), "--json", "--output", str(tmp_path / "cmp2")]) == 0
    assert json.loads(capsys.readouterr().out)["comparisons"][0]["unknown"] == [
        "in-context example not recorded in B (False vs unknown): compared as unknown, not as different"]


def test_other_data_revisions_and_non_runs_are_refused(runs, tmp_path, capsys):
    other = tmp_path / "other-revision"
    shutil.copytree(runs["oracle"], other)
    results = json.loads((other / "results.json").read_text())
    results["dataset"]["upstream_revision"] = "0" * 40
    (other / "results.json").write_text(json.dumps(results))
    capsys.readouterr()
    assert main(["compare", str(runs["oracle"]), str(other)]) == 2
    assert "data revision" in capsys.readouterr().err
    assert main(["compare", str(runs["oracle"]), str(tmp_path)]) == 2
    assert "no results.json" in capsys.readouterr().err


def test_agentic_runs_compare_by_episode(tmp_path, data_dir, capsys):
    agent = tmp_path / "agent"
    assert main(["agent", "--model", "oracle", "--levels", "level-3", "--data-dir", str(data_dir),
                 "--output", str(agent)]) == 0
    none = tmp_path / "none"
    assert main(["agent", "--model", "none", "--levels", "level-3", "--data-dir", str(data_dir),
                 "--output", str(none)]) == 0
    capsys.readouterr()
    assert main(["compare", str(agent), str(none), "--json", "--output", str(tmp_path / "cmp")]) == 0
    entry = next(e for e in json.loads(capsys.readouterr().out)["comparisons"][0]["comparisons"] if e["metric"] == "success")
    assert entry["n"] == 50 and entry["favour_a"] > 40 and entry["p"] < 1e-10
    assert sum(entry["flipped"]["lost"]["by_category"].values()) == entry["favour_a"]


def test_exact_sign_test_and_p_formatting():
    assert sign_test(0, 0) == 1.0 and sign_test(3, 3) == 1.0
    assert sign_test(6, 0) == pytest.approx(0.03125)
    assert sign_test(0, 779) > 0  # exact, no underflow to zero
    assert smallest_significant_count() == 6
    assert [format_p(p) for p in (1.0, 0.031, 3.2e-15, 0.5)] == ["1.0", "0.031", "3.2e-15", "0.5"]


def test_the_regression_gate(runs, tmp_path, data_dir, capsys):
    """``--fail-if-worse POINTS``: exit 1 naming the metric when B is significantly worse by more than POINTS;
    0 for a run against itself, and 0 when the loss is within the points allowed."""
    empty = tmp_path / "empty.jsonl"
    with empty.open("w") as handle:
        for line in (runs["oracle"] / "predictions.jsonl").read_text().splitlines():
            handle.write(json.dumps({**json.loads(line), "prediction": ""}) + "\n")
    assert main(["score", str(empty), "--data-dir", str(data_dir), "--output", str(tmp_path / "empty")]) == 0
    capsys.readouterr()
    assert main(["compare", str(runs["oracle"]), str(runs["oracle"]), "--fail-if-worse", "2",
                 "--output", str(tmp_path / "self")]) == 0
    assert main(["compare", str(runs["oracle"]), str(tmp_path / "empty"), "--fail-if-worse", "2",
                 "--output", str(tmp_path / "gate")]) == 1
    err = [line for line in capsys.readouterr().err.strip().splitlines() if ": note: " not in line]
    assert len(err) == 1 and err[0].startswith("apibank compare: worse: ") and "more than 2 points worse with p < 0.05" in err[0]
    assert re.search(r": (paper|corrected) level-\d (api|response|dialogue): B-A = -", err[0]), err[0]
    # every fourth API call lost: the gate fails below the worst significant loss and passes above it
    assert main(["compare", str(runs["oracle"]), str(runs["degraded"]), "--output", str(tmp_path / "plain")]) == 0
    entries = json.loads((tmp_path / "plain" / "compare.json").read_text())["comparisons"][0]["comparisons"]
    worst = max(-100 * entry["difference"] for entry in entries if entry["p"] < 0.05)
    assert main(["compare", str(runs["oracle"]), str(runs["degraded"]), "--fail-if-worse", f"{worst + 0.5:.3f}",
                 "--output", str(tmp_path / "loose")]) == 0
    assert main(["compare", str(runs["oracle"]), str(runs["degraded"]), "--fail-if-worse", f"{worst - 0.5:.3f}",
                 "--output", str(tmp_path / "tight")]) == 1
    assert main(["compare", str(runs["oracle"]), str(runs["degraded"]), "--fail-if-worse", "2", "--alpha", "1e-300",
                 "--output", str(tmp_path / "strict")]) == 0  # significant, but not at that level
    assert main(["compare", str(runs["oracle"]), str(runs["oracle"]), "--fail-if-worse", "-1"]) == 2


def test_a_level_too_small_to_detect_any_difference_says_so(tmp_path, data_dir, capsys):
    """The issue's case: at n=4 the mdd column said 150 points; it now says the size detects nothing."""
    oracle = tmp_path / "oracle"
    assert main(["evaluate", "--model", "oracle", "--levels", "1", "--limit", "4", "--allow-subset", "--data-dir",
                 str(data_dir), "--output", str(oracle), "--quiet", "--json"]) == 0
    empty = tmp_path / "empty.jsonl"
    empty.write_text("".join(json.dumps({**json.loads(line), "prediction": ""}) + "\n"
                             for line in (oracle / "predictions.jsonl").read_text().splitlines()))
    assert main(["score", str(empty), "--data-dir", str(data_dir), "--output", str(tmp_path / "empty"), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["compare", str(oracle), str(tmp_path / "empty"), "--output", str(tmp_path / "cmp")]) == 0
    table = capsys.readouterr().out
    entries = json.loads((tmp_path / "cmp" / "compare.json").read_text())["comparisons"][0]["comparisons"]
    small = [entry for entry in entries if entry["n"] < smallest_significant_count()]
    assert small and all(entry["mdd"] is None and entry["mdd_reason"].startswith(f"n={entry['n']}: too few samples")
                         and "n too small to detect any difference" in entry["line"] for entry in small)
    assert all(entry["mdd"] is None or entry["mdd"] <= 1 for entry in entries)
    assert f"n too small: in {len(small)} of {len(entries)} rows no difference can be detected" in table
    shown = [float(value) for value in re.findall(r"\s(\d+\.\d\d)$", table, re.MULTILINE)]  # the mdd column
    assert max(shown, default=0) <= 100, table
    assert "n too small" in (tmp_path / "cmp" / "compare.md").read_text()
