"""``apibank leaderboard`` on real runs built here: the oracle on a level-1 and level-3 subset, two
degraded copies of it (API-call predictions emptied, rescored with ``apibank score``), a run of another
subset (kept apart) and two agentic runs; the page in a real headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from support.browser import loaded, needs_chromium

from apibank.cli.main import main
from apibank.report.compare import holm, sign_test
from apibank.report.published import PUBLISHED

LIMIT = 30


def _emptied(oracle: Path, root: Path, name: str, every: int, data_dir: Path) -> tuple[Path, list[str]]:
    """The oracle's predictions with every ``every``-th API-call prediction emptied, scored with apibank score."""
    kinds = {entry["id"]: entry["kind"] for entry in map(json.loads, (oracle / "details.jsonl").read_text().splitlines())}
    folder = root / name
    folder.mkdir()
    emptied, seen, lines = [], 0, []
    for line in (oracle / "predictions.jsonl").read_text().splitlines():
        record = json.loads(line)
        if kinds[record["id"]] == "api":
            if seen % every == 0:
                record["prediction"] = ""
                emptied.append(record["id"])
            seen += 1
        lines.append(json.dumps(record))
    (folder / "predictions.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["score", str(folder / "predictions.jsonl"), "--data-dir", str(data_dir), "--quiet",
                 "--model", name]) == 0
    return folder, emptied


@pytest.fixture(scope="module")
def runs(tmp_path_factory, data_dir) -> dict:
    root = tmp_path_factory.mktemp("board")
    oracle = root / "oracle"
    assert main(["evaluate", "--model", "oracle", "--levels", "level-1", "level-3", "--limit", str(LIMIT),
                 "--allow-subset", "--data-dir", str(data_dir), "--output", str(oracle), "--quiet"]) == 0
    half, half_emptied = _emptied(oracle, root, "half", 2, data_dir)
    fifth, fifth_emptied = _emptied(oracle, root, "fifth", 5, data_dir)
    other = root / "other-subset"
    assert main(["evaluate", "--model", "oracle", "--levels", "level-1", "level-3", "--limit", "10", "--allow-subset",
                 "--data-dir", str(data_dir), "--output", str(other), "--quiet"]) == 0
    agents = {}
    for model in ("oracle", "none"):
        agents[model] = root / f"agent-{model}"
        assert main(["agent", "--model", model, "--levels", "level-3", "--limit", "8", "--data-dir", str(data_dir),
                     "--output", str(agents[model])]) == 0
    return {"root": root, "oracle": oracle, "half": half, "fifth": fifth, "other": other, "agents": agents,
            "emptied": {"half": half_emptied, "fifth": fifth_emptied}}


@pytest.fixture(scope="module")
def board(runs) -> tuple[dict, Path, str]:
    output = runs["root"] / "board"
    arguments = [str(runs[name]) for name in ("half", "oracle", "fifth", "other")]
    arguments += [str(runs["agents"]["none"]), str(runs["agents"]["oracle"])]
    import io
    from contextlib import redirect_stdout

    printed = io.StringIO()
    with redirect_stdout(printed):
        assert main(["leaderboard", *arguments, "--output", str(output)]) == 0
    return json.loads((output / "leaderboard.json").read_text()), output, printed.getvalue()


def _table(board: dict, group: int, protocol: str, level: str) -> dict:
    return next(t for t in board["tables"] if (t["group"], t["protocol"], t["level"]) == (group, protocol, level))


def test_holm_against_a_hand_computed_example():
    # sorted: 0.005 x4 = 0.02; 0.01 x3 = 0.03; 0.03 x2 = 0.06; 0.04 x1 = 0.04, raised to the 0.06 before it
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == [1.0, 1.0] and holm([]) == []  # 0.5 x2 caps at 1; 0.9 raised to it


def test_runs_are_ranked_per_protocol_and_level_with_their_intervals(runs, board):
    board, output, printed = board
    assert [g["runs"] for g in board["groups"]][:2] == [["half", "oracle", "fifth"], ["other-subset (oracle)"]]
    table = _table(board, 1, "corrected", "level-1")
    assert [(row["rank"], row["run"]) for row in table["rows"]] == [(1, "oracle"), (2, "fifth"), (3, "half")]
    results = json.loads((runs["oracle"] / "results.json").read_text())["scores"]["corrected"]["level-1"]["api"]
    assert table["rows"][0]["cells"]["api"] == {"value": 1.0, "ci95": results["ci95"], "n": LIMIT,
                                               "correct": LIMIT, "total": LIMIT}
    half = json.loads((runs["half"] / "results.json").read_text())["scores"]["corrected"]["level-1"]["api"]
    assert table["rows"][2]["cells"]["api"]["ci95"] == half["ci95"] and half["ci95"][0] < half["accuracy"] < half["ci95"][1]
    # protocols side by side, never pooled; level 3 has its dialogue accuracy
    assert {(t["protocol"], t["level"]) for t in board["tables"] if t["group"] == 1} == {
        (p, f"level-{n}") for p in ("paper", "corrected") for n in (1, 3)}
    assert "dialogue" in _table(board, 1, "paper", "level-3")["rows"][0]["cells"]
    assert "group 1: protocol corrected, level-1 (subset)" in printed and (output / "leaderboard.md").is_file()


def test_the_matrix_holds_paired_sign_tests_holm_adjusted(runs, board):
    board = board[0]
    table = _table(board, 1, "corrected", "level-1")
    pairs = {(p["row"], p["column"]): p for p in table["matrix"]["pairs"]}
    assert set(pairs) == {("oracle", "fifth"), ("oracle", "half"), ("fifth", "half")}
    level1 = {name: [i for i in runs["emptied"][name] if i.startswith("level-1/")] for name in ("half", "fifth")}
    assert (len(level1["half"]), len(level1["fifth"])) == (15, 7)  # of the 30 level-1 calls
    assert all(p["n"] == LIMIT for p in pairs.values())  # every sample shared
    # the oracle is right on every corrected call: each emptied call is a discordant sample for it
    assert pairs[("oracle", "half")]["favour_row"] == 15 and pairs[("oracle", "half")]["favour_column"] == 0
    assert pairs[("oracle", "half")]["p"] == sign_test(15, 0)
    assert pairs[("oracle", "fifth")]["p"] == sign_test(7, 0) == 2 / 2**7
    both = set(level1["half"]) & set(level1["fifth"])
    gained, lost = len(set(level1["half"]) - both), len(set(level1["fifth"]) - both)
    assert (pairs[("fifth", "half")]["favour_row"], pairs[("fifth", "half")]["favour_column"]) == (gained, lost)
    order = [("oracle", "fifth"), ("oracle", "half"), ("fifth", "half")]
    raw = [pairs[key]["p"] for key in order]
    assert [pairs[key]["p_holm"] for key in order] == holm(raw)
    # by hand: oracle-half is the smallest p (x3); oracle-fifth next (x2), fifth-half last (x1), monotone
    assert pairs[("oracle", "half")]["p_holm"] == pytest.approx(3 * sign_test(15, 0))
    assert pairs[("oracle", "fifth")]["p_holm"] == pytest.approx(2 * sign_test(7, 0))
    assert pairs[("oracle", "half")]["difference"] == pytest.approx(0.5)


def test_runs_that_do_not_share_their_samples_are_kept_apart(runs, board):
    board, _, printed = board
    kept = {item["run"]: item for item in board["kept_apart"]}
    other = kept[str(runs["other"])]
    assert other["group"] == 2 and "scored samples differ" in other["reasons"][0] and "paper/level-1/api: 30 vs 10, 10 shared" in other["reasons"][0]
    assert f"kept apart: {runs['other']} is group 2" in printed
    agentic = [g for g in board["groups"] if g["kind"] == "agentic"]
    assert len(agentic) == 1 and agentic[0]["runs"] == ["agent-none (none)", "agent-oracle (oracle)"]
    assert "an agentic run, the group's are classic" in kept[str(runs["agents"]["none"])]["reasons"][0]
    table = _table(board, agentic[0]["number"], "searcher", "level-3")
    assert [row["run"] for row in table["rows"]] == ["agent-oracle (oracle)", "agent-none (none)"]
    pair = table["matrix"]["pairs"][0]
    assert pair["n"] == 8 and pair["favour_row"] == table["rows"][0]["cells"]["success"]["correct"]
    assert pair["p_holm"] == pair["p"]  # one pair: nothing to adjust


def test_published_figures_are_reference_rows_never_ranked(board):
    board = board[0]
    references = [r for t in board["tables"] for r in t["references"]]
    assert len(references) == len(PUBLISHED) and all(r["status"] == "reported, not run here" for r in references)
    # the local runs are subsets: the paper's whole-level figures get tables of their own
    tables = [t for t in board["tables"] if t["references"]]
    assert all(t["group"] is None and t["rows"] == [] and t["protocol"] == "paper" for t in tables)
    assert all("rank" not in r for r in references)
    gpt = next(r for r in references if r["model"] == "GPT-3.5-turbo" and r["level"] == "level-1")
    assert (gpt["cells"]["api"]["correct"], gpt["cells"]["api"]["total"]) == (218, 399)


def test_bad_input_is_one_line_before_any_work(runs, tmp_path, capsys):
    capsys.readouterr()
    assert main(["leaderboard", str(runs["oracle"]), str(tmp_path), "--output", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "no results.json" in error and not (tmp_path / "out").exists()
    assert main(["leaderboard", "--output", str(tmp_path / "out")]) == 2
    assert "no runs" in capsys.readouterr().err and not (tmp_path / "out").exists()
    assert main(["leaderboard", str(runs["oracle"]), str(runs["oracle"]), "--output", str(tmp_path / "out")]) == 2
    assert "is given more than once" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_runs_whose_folders_end_alike_are_named_by_their_paths(runs, tmp_path):
    copy = tmp_path / "elsewhere" / "oracle"
    shutil.copytree(runs["oracle"], copy)
    assert main(["leaderboard", str(runs["oracle"]), str(copy), "--output", str(tmp_path / "out"), "--json"]) == 0
    board = json.loads((tmp_path / "out" / "leaderboard.json").read_text())
    assert board["groups"][0]["runs"] == [f"{runs['oracle']} (oracle)", f"{copy} (oracle)"]
    pair = _table(board, 1, "paper", "level-1")["matrix"]["pairs"][0]
    assert (pair["difference"], pair["p"], pair["n"]) == (0.0, 1.0, LIMIT)  # the same predictions: no difference


@needs_chromium
def test_the_page_ranks_links_and_sorts(runs, board):
    board, output, _ = board
    page = output / "leaderboard.html"
    html = page.read_text()
    assert html.count("</script>") == 2 and not re.search(r"<(link|img|iframe)\b|\bsrc=", html.split('id="run-data"')[0])
    dom = loaded(page)
    first = re.search(r'<table class="board" id="board-0">.*?</table>', dom, re.S).group(0)
    table = next(t for t in board["tables"] if t["group"] == 1)
    assert re.findall(r'data-run="([^"]+)" data-rank="(\d+)"', first) == [(r["run"], str(r["rank"])) for r in table["rows"]]
    links = re.findall(r'<a href="([^"]+)">', dom)
    assert links and all((output / link).resolve().is_file() for link in links)
    assert str(runs["oracle"].relative_to(runs["root"])) in " ".join(links) and not any(l.startswith("/") for l in links)
    assert dom.count('class="reported"') == len(PUBLISHED)
    assert dom.count('class="meta kept-apart">kept apart: ') == len(board["kept_apart"]) == 2
    # a bookmarked sort: by run name, descending
    first = re.search(r'<table class="board" id="board-0">.*?</table>', loaded(page, "#sort=run&dir=desc"), re.S).group(0)
    assert [name for name, _ in re.findall(r'data-run="([^"]+)" data-rank="(\d+)"', first)] == ["oracle", "half", "fifth"]
    assert 'aria-sort="descending"' in first
