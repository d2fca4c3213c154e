"""The leaderboard (:mod:`apibank.report.leaderboard`) as text for the terminal, ``leaderboard.md`` and
``leaderboard.html`` (the report viewer's shell, :func:`apibank.report.html.page`, in its leaderboard view)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from apibank.files import atomic_write_text
from apibank.judge.intervals import bracket

LEADERBOARD_FILES = ("leaderboard.json", "leaderboard.md", "leaderboard.html")
RATES = {"api", "dialogue", "success", "pass_k", "pass_at_k"}


def figure_text(key: str, cell: Mapping[str, Any] | None) -> str:
    """``83.33% [50.00, 100.00] (10/12)`` for a rate, ``0.4622 [0.41, 0.51]`` for ROUGE-L; ``-`` for none."""
    if not cell:
        return "-"
    rate = key in RATES
    form = (lambda bound: f"{100 * bound:.2f}") if rate else (lambda bound: f"{bound:.4f}")
    text = f"{100 * cell['value']:.2f}%" if rate else f"{cell['value']:.4f}"
    shown = bracket(cell.get("ci95"), cell.get("ci95_reason"), form)
    if shown:
        text += f" {shown}"
    if cell.get("total") is not None and cell.get("correct") is not None:
        text += f" ({cell['correct']}/{cell['total']})"
    return text


def title(table: Mapping[str, Any]) -> str:
    where = f"group {table['group']}" if table["group"] is not None else "reported elsewhere"
    protocol = ("setting " if table["kind"] == "agentic" else "protocol ") + table["protocol"]
    return f"{where}: {protocol}, {table['level']}" + (f" ({table['subset_label']})" if table.get("subset_label")
                                                       else " (subset)" if table["subset"] else "")


def score_rows(table: Mapping[str, Any], links: bool = False) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a ranked table: ranked runs (with ``links``, each a Markdown link to its
    report.html where it has one), then reference rows (rank ``-``, their status)."""
    headers = ["rank", "run", *[figure["label"] for figure in table["figures"]], "source"]

    def name(row: Mapping[str, Any]) -> str:
        return f"[{row['run']}]({row['report']})" if links and row.get("report") else row["run"]

    body = [[str(row["rank"]), name(row), *[figure_text(f["key"], row["cells"].get(f["key"])) for f in table["figures"]],
             "run here"] for row in table["rows"]]
    body += [["-", reference["model"], *[figure_text(f["key"], reference["cells"].get(f["key"])) for f in table["figures"]],
              f"{reference['status']}: {reference['source']}"
              + (f"; {reference['recompute']}" if reference.get("recompute") else "")] for reference in table["references"]]
    return headers, body


def pair_text(pair: Mapping[str, Any]) -> str:
    return (f"{100 * pair['difference']:+.2f} {bracket(pair['ci95'], pair.get('ci95_reason'), lambda b: f'{100 * b:+.2f}')} "
            f"p={pair['p_shown']} Holm p={pair['p_holm_shown']} n={pair['n']}")


def matrix_rows(table: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The pairwise matrix: row - column in points where the row ranks higher, blank elsewhere."""
    names = [row["run"] for row in table["rows"]]
    cells = {(pair["row"], pair["column"]): pair_text(pair) for pair in table["matrix"]["pairs"]}
    return ["row - column", *names], [[name, *[cells.get((name, other), "") for other in names]] for name in names]


RESOURCE_COLUMNS = (("samples", "samples"), ("prompt_tokens", "prompt tokens"), ("generated_tokens", "generated tokens"),
                    ("seconds", "seconds"), ("wall_seconds", "wall seconds"), ("samples_per_second", "samples/s"),
                    ("cost", "cost"), ("latency_mean", "latency mean (s)"), ("latency_p95", "latency p95 (s)"))


def resource_rows(group: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    headers = ["run", *[label for _, label in RESOURCE_COLUMNS]]
    return headers, [[entry["run"], *[resource_cell(entry, key) for key, _ in RESOURCE_COLUMNS]]
                     for entry in group["resources"]]


def resource_cell(entry: Mapping[str, Any], key: str) -> str:
    if entry.get(key) is None:
        return "-"
    note = entry.get("wall_note") if key == "wall_seconds" else None
    return f"{entry[key]:g}" + (f" ({note})" if note else "")


def _text(headers: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(line[i])) for line in [headers, *body]) for i in range(len(headers))]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(headers, widths)).rstrip(), "  ".join("-" * w for w in widths)]
    return lines + ["  ".join(str(c).ljust(w) for c, w in zip(line, widths)).rstrip() for line in body]


def _markdown(headers: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    def row(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return [row(headers), "|" + "---|" * len(headers), *[row(line) for line in body]]


def _sections(board: Mapping[str, Any], form, links: bool = False) -> list[tuple[str, list[str]]]:
    """(heading, lines) for every part of the board, in reading order, each table drawn by ``form``."""
    out = []
    for item in board["kept_apart"]:
        out.append(("", [f"kept apart: {item['run']} is group {item['group']} (it shares its samples with no run "
                         f"before it: {' | '.join(item['reasons'])})"]))
    for group in board["groups"]:
        tables = [table for table in board["tables"] if table["group"] == group["number"]]
        for table in tables:
            out.append((title(table), form(*score_rows(table, links))))
            if table["matrix"]["pairs"]:
                out.append((f"{title(table)}: paired {table['matrix']['metric']} differences (points)",
                            form(*matrix_rows(table))))
        out.append((f"group {group['number']}: resources", form(*resource_rows(group))))
    for table in board["tables"]:
        if table["group"] is None:
            out.append((title(table), form(*score_rows(table))))
    return out


def ranked_on(board: Mapping[str, Any]) -> str:
    """The line saying what the board ranks on: the full benchmark or the verified subset (and its audit)."""
    chosen = board.get("ranked_on") or {"rows": "full"}
    if chosen["rows"] == "full":
        return "ranked on: the full benchmark (every scored row)"
    audit = chosen.get("audit") or {}
    return (f"ranked on: the {chosen['rows']} subset (row audit {audit.get('version')}): only the rows it marks "
            f"{chosen['rows']}, never the full benchmark; published figures left out")


def text(board: Mapping[str, Any]) -> str:
    parts = [ranked_on(board)]
    for heading, lines in _sections(board, _text):
        parts.append("\n".join(([heading] if heading else []) + lines))
    return "\n\n".join(parts)


def markdown(board: Mapping[str, Any]) -> str:
    lines = ["# API-Bank leaderboard", "", ranked_on(board), ""]
    for group in board["groups"]:
        lines.append(f"- group {group['number']} ({group['kind']}): " + ", ".join(f"`{path}`" for path in group["paths"]))
    lines.append("")
    for heading, body in _sections(board, _markdown, links=True):
        lines += ([f"## {heading}", ""] if heading else []) + body + [""]
    lines += ["## Method", "", *[f"- **{name}**: {what}" for name, what in board["method"].items()], ""]
    return "\n".join(lines)


def write(board: Mapping[str, Any], output: str | Path) -> dict[str, Path]:
    """Write leaderboard.json, leaderboard.md and leaderboard.html into ``output``."""
    from apibank.report.html import page
    from apibank.report.leaderboard import dumps

    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    paths = {name: output / name for name in LEADERBOARD_FILES}
    atomic_write_text(paths["leaderboard.json"], dumps(board))
    atomic_write_text(paths["leaderboard.md"], markdown(board))
    atomic_write_text(paths["leaderboard.html"], page("API-Bank leaderboard", {"view": "leaderboard", "board": board,
                                                                          "resource_columns": RESOURCE_COLUMNS}))
    return paths
