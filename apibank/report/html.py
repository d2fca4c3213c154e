"""``report.html``: one self-contained page per run folder, readable from disk with no server and no network.

The page is a fixed shell (``viewer.css`` and ``viewer.js`` from this package, inlined) plus the run's
data as JSON in a ``<script type="application/json">`` element. Everything a model wrote is untrusted:
the JSON text is escaped so that no ``<``, ``>`` or ``&`` survives (a ``</script>`` in an output cannot
end the element), and the script only ever puts strings into the page as text nodes.

Classic runs (``apibank evaluate`` / ``apibank score``) show every judged sample of ``details.jsonl``
joined with its ``predictions.jsonl`` record (prompt, raw output, prediction) and, when the rows are
given, the gold call and result. Agentic runs (``apibank agent``) show every trajectory of
``trajectories.jsonl``: the conversation, each executed call and its result, the verdict and the
state difference. Prompts repeat the same tool descriptions line after line, so prompt lines are
stored once in a string table and each prompt is a list of indexes into it.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from apibank.files import RESULTS_FILE, TRAJECTORIES_FILE, atomic_write_text, json_safe, read_trajectories

REPORT_HTML_FILE = "report.html"
COMPARE_HTML_FILE = "compare.html"

try:  # the paper's error type of each wrong verdict, where this version of the package maps them
    from apibank.report.error_types import paper_type as _paper_type
except ImportError:  # pragma: no cover - older layouts carry only the judge's categories
    _paper_type = None


def embed_json(value: Any) -> str:
    """JSON text safe inside a ``<script>`` element: pure ASCII with ``<``, ``>``, ``&`` escaped."""
    text = json.dumps(json_safe(value), ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _asset(name: str) -> str:
    return resources.files("apibank.report").joinpath(name).read_text(encoding="utf-8")


def page(title: str, data: Mapping[str, Any]) -> str:
    """The whole HTML document for ``data`` (its ``view`` key says which view the script draws)."""
    from html import escape

    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        # No request can leave the page: everything it needs is inline.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
        f"<title>{escape(title)}</title>\n<style>\n{_asset('viewer.css')}</style>\n</head>\n<body>\n"
        "<noscript>This report needs JavaScript to draw its tables.</noscript>\n<main id=\"app\"></main>\n"
        f"<script type=\"application/json\" id=\"run-data\">{embed_json(data)}</script>\n"
        f"<script>\n{_asset('viewer.js')}</script>\n</body>\n</html>\n"
    )


class _Strings:
    """A table of distinct lines; a text becomes the list of its lines' indexes."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._index: dict[str, int] = {}

    def encode(self, text: Any) -> list[int] | None:
        if not isinstance(text, str):
            return None
        out = []
        for line in text.split("\n"):
            if line not in self._index:
                self._index[line] = len(self.lines)
                self.lines.append(line)
            out.append(self._index[line])
        return out




def _verdict(entry: Mapping[str, Any]) -> str:
    if entry.get("kind") == "response":
        return "scored"
    return {True: "correct", False: "wrong"}.get(entry.get("verdict"), "not judged")


def _error_type(entry: Mapping[str, Any]) -> str | None:
    if _paper_type is None or entry.get("kind") != "api" or entry.get("verdict") is not False:
        return None
    try:
        return _paper_type(entry.get("category"), entry.get("name"))
    except ValueError:
        return None


def gold_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """What the dataset row expects: the gold text and, for an API row, the gold call and its recorded result."""
    target = row.get("target") or {}

    def value(field: str) -> Any:  # Json() columns may arrive as JSON text
        item = target.get(field)
        if isinstance(item, str):
            try:
                return json.loads(item)
            except ValueError:
                return item
        return item

    return {"text": row.get("expected_output"), "api_name": target.get("api_name") or None,
            "arguments": value("arguments"), "result": value("result")}


def classic_data(run_dir: Path, rows: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The viewer's data for an ``apibank evaluate``/``score`` folder."""
    from apibank.files import read_json_lines
    from apibank.generate.predictions import read_predictions

    results = json.loads((run_dir / RESULTS_FILE).read_text(encoding="utf-8"))
    files = results.get("files") or {}  # the run names its own files
    strings = _Strings()
    gold = {str(row["id"]): gold_of(row) for row in rows or ()}
    records = {}
    for record in read_predictions(run_dir / files.get("predictions", "predictions.jsonl")):
        raw = record.get("raw_output")
        records[record["id"]] = {
            "prompt": strings.encode(record.get("prompt")),
            "prediction": record.get("prediction"),
            # The raw output only where it says more than the prediction (a stop string, a template).
            "raw_output": raw if raw != record.get("prediction") else None,
        }
    samples = []
    for entry in read_json_lines(run_dir / files.get("details", "details.jsonl")):
        sample_id = str(entry.get("id"))
        expected = gold.get(sample_id, {})
        samples.append({
            "id": sample_id, "protocol": entry.get("protocol"), "level": f"level-{entry.get('level')}",
            "kind": entry.get("kind"), "verdict": _verdict(entry), "score": entry.get("score"),
            "category": entry.get("category"), "error_type": _error_type(entry),
            "tool": expected.get("api_name") or entry.get("name"),
            "called": entry.get("name"), "extracted_call": entry.get("extracted_call"),
            "arguments": entry.get("arguments"), "result": entry.get("result"), "error": entry.get("error"),
            "retrieved": entry.get("retrieved"),
        })
    return {"view": "classic", "results": results, "lines": strings.lines, "predictions": records,
            "gold": gold, "samples": samples}


def _episode_tools(record: Mapping[str, Any]) -> list[str]:
    return sorted({str(step.get("name")) for step in record.get("trajectory") or () if step.get("name")})


def _episode_category(record: Mapping[str, Any]) -> list[str]:
    verdict = record.get("verdict") or {}
    reasons = []
    if verdict.get("state_ok") is False:
        reasons.append("state differs")
    if verdict.get("information_ok") is False:
        reasons.append("information missing")
    if record.get("stopped"):
        reasons.append("stopped: " + str(record["stopped"]).split(":")[0])
    return reasons


def agentic_data(run_dir: Path) -> dict[str, Any]:
    """The viewer's data for an ``apibank agent`` folder."""
    results = json.loads((run_dir / RESULTS_FILE).read_text(encoding="utf-8"))
    episodes = []
    for record in read_trajectories(run_dir / TRAJECTORIES_FILE):
        verdict = record.get("verdict") or {}
        episodes.append({
            **record, "tools": _episode_tools(record), "categories": _episode_category(record),
            "verdict_label": "success" if verdict.get("success") else "failure",
        })
    return {"view": "agentic", "results": results, "episodes": episodes}


def is_agentic(run_dir: Path) -> bool:
    """An ``apibank agent`` folder: its results.json has per-level summaries (a mapping), a classic one a list."""
    results = json.loads((run_dir / RESULTS_FILE).read_text(encoding="utf-8"))
    return isinstance(results.get("levels"), dict)


def write_report_html(run_dir: str | Path, rows: Sequence[Mapping[str, Any]] | None = None) -> Path:
    """Write ``report.html`` into a classic or agentic run folder and return its path.

    ``rows`` (the dataset rows the run scored) adds each sample's gold call and result; without
    them the page shows what the run folder holds."""
    run_dir = Path(run_dir)
    data = agentic_data(run_dir) if is_agentic(run_dir) else classic_data(run_dir, rows)
    model = (data["results"].get("model") or {}).get("id")
    path = run_dir / REPORT_HTML_FILE
    atomic_write_text(path, page(f"API-Bank: {model}", data))
    return path


def _flipped_ids(comparison: Mapping[str, Any]) -> set[str]:
    return {str(flip.get("id")) for entry in comparison.get("comparisons") or ()
            for flip in entry.get("flipped_samples") or ()}


def _run_side(path: str | None, ids: set[str], rows: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
    """The parts of one compared run that its flipped samples need (nothing when the folder is gone)."""
    run_dir = Path(path or "")
    if not path or not (run_dir / RESULTS_FILE).is_file():
        return {"missing": True}
    if is_agentic(run_dir):
        data = agentic_data(run_dir)
        data["episodes"] = [e for e in data["episodes"] if str(e.get("episode")) in ids]
        return data
    data = classic_data(run_dir, rows)
    data["samples"] = [s for s in data["samples"] if s["id"] in ids or s["id"].split("#")[0] in ids]
    kept = {s["id"] for s in data["samples"]}
    data["predictions"] = {key: value for key, value in data["predictions"].items() if key in kept}
    data["gold"] = {key: value for key, value in data["gold"].items() if key in kept}
    return data


def write_compare_html(
    comparisons: Mapping[str, Any] | Iterable[Mapping[str, Any]],
    output: str | Path,
    rows: Sequence[Mapping[str, Any]] | None = None,
) -> Path:
    """Write ``compare.html`` into ``output``: each comparison's table and its flipped samples side by side.

    ``comparisons`` is what ``apibank compare`` writes to ``compare.json`` (``{"comparisons": [...]}``)
    or its list. Each comparison needs ``a`` and ``b`` (``{"path": run folder, "model": id}``) and
    ``comparisons``: entries with ``protocol``, ``level``, ``metric``, ``n``, ``a``, ``b``,
    ``difference``, ``ci95``, ``p`` and, for 0/1 metrics, ``flipped_samples`` (``{"id", "direction":
    "gained"|"lost", "category", "tool"}``). The flipped samples are read back from both run folders."""
    pairs = list(comparisons.get("comparisons") or ()) if isinstance(comparisons, Mapping) else list(comparisons)
    data_pairs = []
    for pair in pairs:
        ids = _flipped_ids(pair)
        data_pairs.append({
            "comparison": pair,
            "runs": {side: _run_side((pair.get(side) or {}).get("path"), ids, rows) for side in ("a", "b")},
        })
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    path = output / COMPARE_HTML_FILE
    atomic_write_text(path, page("API-Bank: comparison", {"view": "compare", "pairs": data_pairs}))
    return path
