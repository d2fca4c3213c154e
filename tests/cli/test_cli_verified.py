"""The verified subset through the command line: reported beside the full scores by evaluate, score and agent,
run alone with --subset verified (labelled as a subset everywhere, never published), ranked on by
apibank leaderboard --on verified. The audit is a copy of the shipped one with every row verified but a few
level-3 rows, so that the figures expected follow from the test alone, whatever the shipped audit decides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.audits import copy_audit

import apibank_cli
from apibank.data import audits
from apibank.files import read_json_lines

MARKED = {"level-3/0#0": "underdetermined", "level-3/0#response": "wording", "level-3/7#1": "not-reproducible"}


@pytest.fixture(scope="module")
def audit_folder(tmp_path_factory) -> Path:
    return copy_audit(tmp_path_factory.mktemp("audit") / "audit", MARKED, others="verified")


@pytest.fixture(scope="module")
def runs(data_dir, audit_folder, tmp_path_factory) -> dict[str, Path]:
    """Oracle runs of level 3: under the shipped audit, under the test's, and the test's verified subset alone."""
    root = tmp_path_factory.mktemp("verified")
    out = {"shipped": root / "shipped", "full": root / "full", "subset": root / "subset"}
    base = ["evaluate", "--model", "oracle", "--levels", "3", "--data-dir", str(data_dir), "--quiet"]
    assert apibank_cli.main([*base, "--output", str(out["shipped"])]) == 0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(audits, "AUDIT_DIR", audit_folder)
        assert apibank_cli.main([*base, "--output", str(out["full"])]) == 0
        assert apibank_cli.main([*base, "--output", str(out["subset"]), "--subset", "verified", "--allow-subset",
                                 "--dataset-id", "someone/api-bank"]) == 0
    return out


def _results(run: Path) -> dict:
    return json.loads((run / "results.json").read_text("utf-8"))


def test_verified_scores_beside_the_full_ones(runs, audit_folder):
    results = _results(runs["full"])
    verified = results["verified"]
    assert results["audit"]["version"] == verified["audit"]["version"] == audits.load_audit(folder=audit_folder).version
    assert results["subset"] is False and results["audit_subset"] is None
    kept = verified["counts"]["level-3"]
    assert kept == {"api": 245 - 2, "response": 50 - 1}
    assert verified["excluded"]["level-3"] == {"not-reproducible": 1, "underdetermined": 1, "wording": 1}
    for protocol in ("paper", "corrected"):
        block = verified["scores"][protocol]["level-3"]
        assert block["api"]["total"] == block["api"]["n"] == kept["api"]
        assert block["response"]["count"] == block["response"]["n"] == kept["response"]
        # the same intervals as the full scores: dialogue-clustered, with their clusters
        assert len(block["api"]["ci95"]) == 2 and block["api"]["clusters"] == 50
        assert block["dialogues"]["total"] == 50 and "error_types" in block
        assert verified["scores"][protocol]["overall"]["api"]["n"] == kept["api"]
    assert verified["scores"]["corrected"]["level-3"]["api"]["accuracy"] == 1.0


def test_the_audit_never_changes_the_full_scores(runs):
    shipped, full = _results(runs["shipped"]), _results(runs["full"])
    assert shipped["scores"] == full["scores"] and shipped["counts"] == full["counts"]


def test_report_and_summary_show_the_verified_subset_apart(runs, data_dir, audit_folder, monkeypatch, capsys):
    report = (runs["full"] / "report.md").read_text("utf-8")
    full_part, verified_part = report.split("## Verified subset (separate from the scores above)")
    # the corrected protocol's oracle: every call right, over 245 rows in the full scores, 243 in the verified ones
    assert "(245/245)" in full_part and "(243/243)" not in full_part
    assert "(243/243)" in verified_part.split("## Per-level accuracy")[0]
    assert "underdetermined 1" in verified_part
    html = (runs["full"] / "report.html").read_text("utf-8")
    assert '"verified":' in html and "verified-summary" in html
    monkeypatch.setattr(audits, "AUDIT_DIR", audit_folder)
    assert apibank_cli.main(["score", str(runs["full"] / "predictions.jsonl"), "--data-dir", str(data_dir),
                             "--output", str(runs["full"].parent / "rescored"), "--quiet"]) == 0
    shown = capsys.readouterr().out
    head, tail = shown.split("verified subset (row audit ")
    assert "(245/245)" in head and "(243/243)" not in head and "(243/243)" in tail
    assert _results(runs["full"].parent / "rescored")["verified"] == _results(runs["full"])["verified"]


def test_subset_run_holds_only_verified_rows_and_says_so(runs, audit_folder):
    results = _results(runs["subset"])
    assert results["subset"] is True and results["audit_subset"] == "verified"
    assert results["counts"]["level-3"] == {"api": 243, "response": 49}
    ids = {record["id"] for record in read_json_lines(runs["subset"] / "predictions.jsonl")}
    assert len(ids) == 292 and not ids & set(MARKED)
    assert results["scores"]["paper"]["level-3"]["api"]["total"] == 243
    for protocol, blocks in results["scores"].items():  # every row verified: the verified figures are the scores
        for key in ("api", "response", "dialogues"):
            assert results["verified"]["scores"][protocol]["level-3"][key] == blocks["level-3"][key]
    report = (runs["subset"] / "report.md").read_text("utf-8")
    assert report.startswith("# API-Bank results: oracle (subset: --subset verified)")
    assert "## Scores of the subset (--subset verified), not the full benchmark" in report
    # never under the official task ids, even with a dataset id
    assert not (runs["subset"] / "leaderboard" / "model").exists()
    assert (runs["subset"] / "leaderboard" / "dataset" / "eval.yaml").is_file()


def test_subset_summary_line_and_refusals(data_dir, audit_folder, tmp_path, monkeypatch, capsys, runs):
    monkeypatch.setattr(audits, "AUDIT_DIR", audit_folder)
    assert apibank_cli.main(["score", str(runs["full"] / "predictions.jsonl"), "--data-dir", str(data_dir),
                             "--output", str(tmp_path / "scored"), "--subset", "verified", "--quiet"]) == 0
    shown = capsys.readouterr().out
    assert "backend=oracle (subset: --subset verified)" in shown and "verified subset (row audit" not in shown
    assert _results(tmp_path / "scored")["counts"]["level-3"] == {"api": 243, "response": 49}
    assert apibank_cli.main(["evaluate", "--model", "oracle", "--levels", "3", "--data-dir", str(data_dir),
                             "--subset", "verified", "--push-to-hub", "someone/model",
                             "--dataset-id", "someone/api-bank",
                             "--output", str(tmp_path / "pushed")]) == 2
    assert "a subset (--subset verified) is never pushed to the Hub" in capsys.readouterr().err
    with pytest.raises(SystemExit) as caught:
        apibank_cli.main(["evaluate", "--model", "oracle", "--subset", "everything"])
    assert caught.value.code == 2
    assert "invalid choice: 'everything'" in capsys.readouterr().err


def test_leaderboard_ranks_on_either_and_says_which(runs, audit_folder, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(audits, "AUDIT_DIR", audit_folder)
    folders = [str(runs["full"]), str(runs["subset"])]
    assert apibank_cli.main(["leaderboard", *folders, "--output", str(tmp_path / "full")]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("ranked on: the full benchmark (every scored row)")
    board = json.loads((tmp_path / "full" / "leaderboard.json").read_text("utf-8"))
    assert board["ranked_on"] == {"rows": "full", "audit": None} and len(board["groups"]) == 2  # full vs subset apart
    assert apibank_cli.main(["leaderboard", *folders, "--on", "verified", "--output", str(tmp_path / "verified")]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("ranked on: the verified subset (row audit ")
    board = json.loads((tmp_path / "verified" / "leaderboard.json").read_text("utf-8"))
    assert board["ranked_on"]["rows"] == "verified" and len(board["groups"]) == 1  # the same rows now
    table = next(t for t in board["tables"] if (t["protocol"], t["level"]) == ("corrected", "level-3"))
    assert table["subset_label"] == "verified subset" and not table["references"]
    assert [row["cells"]["api"]["total"] for row in table["rows"]] == [243, 243]
    assert "ranked on: the verified subset" in (tmp_path / "verified" / "leaderboard.md").read_text("utf-8")


def test_agent_reports_the_verified_episodes_apart(data_dir, audit_folder, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(audits, "AUDIT_DIR", audit_folder)
    out = tmp_path / "agent"
    assert apibank_cli.main(["agent", "--model", "oracle", "--levels", "3", "--data-dir", str(data_dir), "--output",
                             str(out), "--quiet"]) == 0
    shown = capsys.readouterr().out
    results = _results(out)
    level = results["verified"]["levels"]["level-3"]
    # episodes 0 and 7 hold a row that is not verified: left out
    assert (level["episodes"], level["episodes_left_out"], level["episodes_without_rows"]) == (48, 2, 0)
    assert level["runs"] == 48 and level["ci95"]["success_rate"] is not None
    assert results["levels"]["level-3"]["episodes"] == 50
    assert "verified subset (row audit" in shown
    assert "## Verified subset (separate from the figures above" in (out / "report.md").read_text("utf-8")
    assert apibank_cli.main(["leaderboard", str(out), "--on", "verified", "--output", str(tmp_path / "board")]) == 0
    board = json.loads((tmp_path / "board" / "leaderboard.json").read_text("utf-8"))
    assert board["tables"][0]["rows"][0]["cells"]["success"]["total"] == 48
