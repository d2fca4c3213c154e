"""``report.html`` in a real headless browser (Chromium from the system packages), offline from disk.

Runs: the full oracle run, a mixed run (the oracle's predictions with every third one replaced by a
wrong or hostile answer, scored with ``apibank score``) and the agentic oracle run on level 3. Each
page must load with no console message, show the counts of its results.json, and its filters (set
from the URL hash, as a reader's bookmark would) must change which rows are shown.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest
from support.browser import browse, loaded, needs_chromium

import apibank_cli
from apibank.report.html import write_compare_html

pytestmark = needs_chromium

# Hostile answers: markup, a script end tag, a script URL. They must show as text and never run.
HOSTILE = [
    "</script><script>document.title='pwned'</script>",
    "<img src=x onerror=\"document.title='pwned'\">[GetUserToken(username='a', password='b')]",
    "[ToolSearcher(keywords='<b>bold</b> & </SCRIPT>')]",
    "not a call at all",
]


def _shown(dom: str) -> int:
    match = re.search(r'id="shown-count">(\d+)<', dom)
    assert match, "no row count on the page"
    return int(match.group(1))


def _details(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "details.jsonl").read_text("utf-8").splitlines() if line]


@pytest.fixture(scope="module")
def oracle_run(data_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("viewer") / "oracle"
    assert apibank_cli.main(["evaluate", "--model", "oracle", "--data-dir", str(data_dir), "--output", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def mixed_run(oracle_run, data_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("viewer") / "mixed"
    out.mkdir()
    lines = []
    for number, line in enumerate((oracle_run / "predictions.jsonl").read_text("utf-8").splitlines()):
        record = json.loads(line)
        if number % 3 == 0:
            record["prediction"] = record["raw_output"] = HOSTILE[number % len(HOSTILE)]
        lines.append(json.dumps(record))
    (out / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert apibank_cli.main(["score", str(out / "predictions.jsonl"), "--data-dir", str(data_dir), "--model", "mixed"]) == 0
    return out


@pytest.fixture(scope="module")
def agent_run(data_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("viewer") / "agent"
    assert apibank_cli.main(["agent", "--model", "oracle", "--levels", "level-3", "--data-dir", str(data_dir),
                             "--output", str(out)]) == 0
    return out


def _summary_cells(dom: str) -> list[dict[str, str]]:
    return [dict(re.findall(r'data-(\w+)="([^"]*)"', cell)) for cell in re.findall(r'<td class="num score"[^>]*>', dom)]


@pytest.mark.parametrize("run_name", ["oracle_run", "mixed_run"])
def test_classic_page_loads_and_counts_equal_results_json(run_name, request):
    run = request.getfixturevalue(run_name)
    page = run / "report.html"
    html = page.read_text("utf-8")
    # Self-contained: one data element and one script, nothing fetched, no way out of the data element.
    assert html.count("</script>") == 2 and not re.search(r"<(link|img|iframe)\b|\bsrc=", html.split('id="run-data"')[0])
    results = json.loads((run / "results.json").read_text("utf-8"))
    dom = loaded(page)
    cells = _summary_cells(dom)
    assert cells, "no score cells"
    for cell in cells:
        block = results["scores"][cell["protocol"]][cell["level"]][cell["metric"]]
        if cell["metric"] == "response":
            assert int(cell["count"]) == block["count"]
        else:
            assert (int(cell["correct"]), int(cell["total"])) == (block["correct"], block["total"])
    assert {(c["protocol"], c["level"], c["metric"]) for c in cells} >= {
        (p, f"level-{n}", "api") for p in ("paper", "corrected") for n in (1, 2, 3)}
    assert _shown(dom) == len(_details(run))


def test_filters_change_the_rows_shown(mixed_run):
    details = _details(mixed_run)
    page = mixed_run / "report.html"
    wrong = [d for d in details if d["protocol"] == "paper" and d["verdict"] is False]
    assert 0 < len(wrong) < len(details)
    assert _shown(loaded(page, "#protocol=paper&verdict=wrong")) == len(wrong)
    level2 = [d for d in details if d["protocol"] == "corrected" and d["level"] == 2 and d["kind"] == "api"]
    dom = loaded(page, "#protocol=corrected&level=level-2&kind=api")
    assert _shown(dom) == len(level2) and dom.count('<tr class="row"') == min(100, len(level2))
    category = next(d["category"] for d in wrong if d["category"])
    assert _shown(loaded(page, f"#protocol=paper&category={category}")) == sum(
        d["protocol"] == "paper" and d["category"] == category for d in details)


def test_hostile_outputs_show_as_text(mixed_run):
    dom = loaded(mixed_run / "report.html", "#protocol=paper&level=level-1&kind=api&expand=1")
    assert "pwned" not in re.search(r"<title>(.*?)</title>", dom).group(1)
    assert "&lt;/script&gt;&lt;script&gt;document.title='pwned'&lt;/script&gt;" in dom
    assert "<img src" not in dom.lower() and "<b>bold</b>" not in dom
    assert "gold call" in dom and "executed, returned" in dom  # the expanded rows show gold and execution


def test_agentic_page(agent_run):
    results = json.loads((agent_run / "results.json").read_text("utf-8"))["levels"]["level-3"]
    page = agent_run / "report.html"
    dom = loaded(page)
    cell = next(c for c in _summary_cells(dom) if c["metric"] == "succeeded")
    assert (int(cell["correct"]), int(cell["total"])) == (results["succeeded"], results["runs"])
    assert _shown(dom) == results["runs"]
    assert _shown(loaded(page, "#verdict=success")) == results["succeeded"]
    dom = loaded(page, "#tool=EmailReminder&expand=1")
    assert 0 < _shown(dom) < results["runs"] and "state difference" in dom and "executed calls" in dom


def test_compare_page_shows_flipped_samples_side_by_side(oracle_run, mixed_run, tmp_path):
    a = {(d["protocol"], d["id"]): d for d in _details(oracle_run) if d["kind"] == "api"}
    b = {(d["protocol"], d["id"]): d for d in _details(mixed_run) if d["kind"] == "api"}
    flips = [{"id": key[1], "direction": "gained" if b[key]["verdict"] else "lost",
              "category": (a[key] if b[key]["verdict"] else b[key])["category"], "tool": b[key]["name"]}
             for key in a if key[0] == "paper" and key[1].startswith("level-1/") and a[key]["verdict"] != b[key]["verdict"]]
    comparison = {"a": {"path": str(oracle_run), "model": "oracle"}, "b": {"path": str(mixed_run), "model": "mixed"},
                  "comparisons": [{"protocol": "paper", "level": "level-1", "metric": "api", "n": 399, "a": 0.87, "b": 0.6,
                                   "difference": -0.27, "ci95": [-0.3, -0.2], "p": 1e-9, "flipped_samples": flips}]}
    page = write_compare_html({"comparisons": [comparison]}, tmp_path)
    assert _shown(loaded(page)) == len(flips) > 0
    dom = loaded(page, "#verdict=lost&expand=1")
    assert _shown(dom) == sum(f["direction"] == "lost" for f in flips)
    assert dom.count('class="side"') == min(100, _shown(dom)) and "A: oracle" in dom and "B: mixed" in dom


def test_screenshot_reads(mixed_run, tmp_path):
    shot = tmp_path / "report.png"
    browse((mixed_run / "report.html").resolve().as_uri(), screenshot=shot, size="1000,700")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (1000, 700) and len(data) > 20_000  # drawn, not blank


def test_a_one_dialogue_run_shows_why_it_has_no_interval(oracle_run, data_dir, tmp_path):
    out = tmp_path / "one"
    out.mkdir()
    lines = [line for line in (oracle_run / "predictions.jsonl").read_text("utf-8").splitlines()
             if json.loads(line)["id"].startswith("level-1/AddAgenda-AddAlarm-GetUserToken-level-2-1#")]
    (out / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert apibank_cli.main(["score", str(out / "predictions.jsonl"), "--data-dir", str(data_dir)]) == 0
    dom = loaded(out / "report.html")
    full, verified = dom.split('id="verified-summary"', 1)
    # level-1 and overall, API calls and responses, both protocols: in the full summary and again in the verified one
    assert full.count(">one dialogue: no interval<") == 8 and verified.count(">one dialogue: no interval<") == 8
    assert not re.search(r"95% CI \[-?\d", dom)  # none drawn


def test_verified_subset_is_a_section_of_its_own(oracle_run):
    results = json.loads((oracle_run / "results.json").read_text("utf-8"))
    dom = loaded(oracle_run / "report.html")
    assert 'id="verified-summary"' in dom and "Verified subset (separate from the summary above)" in dom
    cells = [dict(re.findall(r'data-(\w+)="([^"]*)"', cell))
             for cell in re.findall(r'<td class="num verified-score"[^>]*>', dom)]
    assert cells
    for cell in cells:
        block = results["verified"]["scores"][cell["protocol"]][cell["level"]][cell["metric"]]
        if cell["metric"] == "response":
            assert int(cell["count"]) == block["count"]
        else:
            assert (int(cell["correct"]), int(cell["total"])) == (block["correct"], block["total"])
