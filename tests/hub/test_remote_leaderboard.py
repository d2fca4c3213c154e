"""``apibank leaderboard --from-hub DATASET_ID`` against the local stand-in of the Hub: the ranking from
``HfApi.get_dataset_leaderboard``, each entry's result file read back, what can be recomputed said."""

from __future__ import annotations

import json

from huggingface_hub import EvalResultEntry, eval_result_entries_to_yaml
from support.hub_standin import HubStandIn, point_huggingface_hub_at

from apibank.cli.main import main
from apibank.hub.remote_leaderboard import STATUS, VALUE_ONLY
from apibank.hub.tasks import dump_yaml

DATASET = "ns/API-Bank"
DETAILS = "https://huggingface.co/datasets/org/good-apibank-details"


def _file(*entries: tuple[str, float], source: str | None = None) -> bytes:
    return dump_yaml(eval_result_entries_to_yaml([
        EvalResultEntry(dataset_id=DATASET, task_id=task, value=value, source_url=source,
                        source_name="API-Bank per-sample details" if source else None)
        for task, value in entries])).encode()


def _entry(rank: int, model: str, value: float, filename: str, source: str | None = None) -> dict:
    entry = {"rank": rank, "modelId": model, "value": value, "filename": filename, "verified": rank == 1,
             "author": {"type": "org", "name": model.split("/")[0]}}
    if source:
        entry["source"] = {"url": source, "name": "API-Bank per-sample details", "isExternal": False}
    return entry


def test_the_hub_leaderboard_becomes_reference_rows(tmp_path, monkeypatch, capsys):
    output = tmp_path / "board"
    with HubStandIn() as hub:
        point_huggingface_hub_at(hub, monkeypatch, tmp_path / "cache")
        hub.add_repo("dataset", DATASET)
        hub.add_repo("model", "org/good", {".eval_results/api-bank.yaml": _file(
            ("level-1-api", 87.22), ("level-1-response", 0.9012), ("level-2-api", 69.63), source=DETAILS)})
        hub.add_repo("model", "org/plain", {".eval_results/api-bank-corrected.yaml": _file(("level-1-api", 40.1))})
        hub.leaderboards[DATASET] = [
            _entry(1, "org/good", 87.22, ".eval_results/api-bank.yaml", DETAILS),
            _entry(2, "org/plain", 40.1, ".eval_results/api-bank-corrected.yaml"),
            _entry(3, "org/gone", 12.0, ".eval_results/api-bank.yaml"),  # its repository is not there
        ]
        assert main(["leaderboard", "--from-hub", DATASET, "--no-published", "--output", str(output)]) == 0
        assert ("GET", f"/api/datasets/{DATASET}/leaderboard") in hub.requests
    board = json.loads((output / "leaderboard.json").read_text())
    rows = {(r["model"], r["protocol"], r["level"]): r for t in board["tables"] for r in t["references"]}
    assert set(rows) == {("org/good", "paper", "level-1"), ("org/good", "paper", "level-2"),
                         ("org/plain", "corrected", "level-1"), ("org/gone", "paper", "unknown")}
    good = rows[("org/good", "paper", "level-1")]
    assert good["cells"]["api"]["value"] == 0.8722 and good["cells"]["response"]["value"] == 0.9012
    assert good["cells"]["api"]["ci95"] is None and good["status"] == STATUS
    assert good["recompute"] == f"rescorable: per-sample details at {DETAILS}"
    assert good["hub"] == {"rank": 1, "value": 87.22, "filename": ".eval_results/api-bank.yaml", "verified": True}
    assert rows[("org/plain", "corrected", "level-1")]["recompute"] == VALUE_ONLY
    assert rows[("org/gone", "paper", "unknown")]["recompute"].startswith("result file .eval_results/api-bank.yaml unreadable")
    printed = capsys.readouterr().out
    assert "reported elsewhere: protocol corrected, level-1" in printed and "org/plain" in printed
    assert "40.10%" in printed and "Hub value: no interval" in printed
    assert all(t["rows"] == [] for t in board["tables"])  # nothing from the Hub is ranked


def test_a_bad_dataset_id_or_a_dataset_without_leaderboard_is_one_line(tmp_path, monkeypatch, capsys):
    assert main(["leaderboard", "--from-hub", "not a repo id"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "--from-hub 'not a repo id' is not a Hub id" in error
    with HubStandIn() as hub:
        point_huggingface_hub_at(hub, monkeypatch, tmp_path / "cache")
        hub.add_repo("dataset", DATASET)
        assert main(["leaderboard", "--from-hub", DATASET, "--output", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"--from-hub {DATASET}: the Hub gave no leaderboard" in error
    assert not (tmp_path / "out").exists()
