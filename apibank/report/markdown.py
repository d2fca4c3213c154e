"""A Markdown report of one evaluation, with PNG plots (matplotlib, Agg backend)."""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from apibank.benchmark import LEVELS, PROTOCOLS
from apibank.files import REPORT_FILE, atomic_path, atomic_write_text
from apibank.report.error_types import markdown_section as error_section
from apibank.judge.intervals import INTERVAL_NOTE
from apibank.report.table import markdown_table, shown_setting, subset_flags, subset_label
from apibank.report.verified import markdown_section as verified_section

PLOTS = {
    "accuracy": "per_level_accuracy.png",
    "errors": "error_categories.png",
    "apis": "api_error_rates.png",
}


def _levels(scores: Mapping[str, Any]) -> list[str]:
    return [level for level in LEVELS if any(level in scores.get(p, {}) for p in PROTOCOLS)]


def _protocols(scores: Mapping[str, Any]) -> list[str]:
    return [p for p in PROTOCOLS if p in scores]


def api_totals(rows: Iterable[Mapping[str, Any]]) -> dict[str, Counter]:
    """Per level, how many API-call rows target each API."""
    totals: dict[str, Counter] = defaultdict(Counter)
    for row in rows:
        if row["kind"] == "api":
            totals[f"level-{row['level']}"][row["target"]["api_name"]] += 1
    return totals


def api_error_rates(scores: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], protocol: str) -> list[dict[str, Any]]:
    """Per API over all levels: errors, calls and error rate, worst first."""
    totals = api_totals(rows)
    errors: Counter = Counter()
    calls: Counter = Counter()
    for level, counter in totals.items():
        calls.update(counter)
        errors.update(scores.get(protocol, {}).get(level, {}).get("errors_by_api", {}) or {})
    table = [
        {"api": api, "errors": errors[api], "calls": calls[api], "rate": errors[api] / calls[api] if calls[api] else 0.0}
        for api in calls
    ]
    return sorted(table, key=lambda entry: (-entry["rate"], -entry["errors"], entry["api"]))


def _plot_accuracy(scores, levels, protocols, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    width = 0.8 / max(1, len(protocols))
    for index, protocol in enumerate(protocols):
        # a level without API-call rows (a partial predictions file) has no accuracy: drawn as 0
        values = [100 * ((scores[protocol].get(level, {}).get("api") or {}).get("accuracy") or 0.0) for level in levels]
        positions = [x + index * width for x in range(len(levels))]
        bars = ax.bar(positions, values, width, label=protocol)
        ax.bar_label(bars, fmt="%.1f", fontsize=7)
    ax.set_xticks([x + width * (len(protocols) - 1) / 2 for x in range(len(levels))], levels)
    ax.set_ylabel("API call accuracy (%)")
    ax.set_ylim(0, 118)
    ax.legend(fontsize=8, loc="upper center", ncol=max(1, len(protocols)))
    ax.set_title("API call accuracy per level")
    fig.tight_layout()
    with atomic_path(path) as temporary:
        fig.savefig(temporary, dpi=120)
    plt.close(fig)


def _plot_errors(scores, levels, protocols, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, max(1, len(protocols)), figsize=(5 * max(1, len(protocols)), 3.8), squeeze=False)
    for ax, protocol in zip(axes[0], protocols):
        categories = sorted({c for level in levels for c in (scores[protocol].get(level, {}).get("errors") or {})})
        bottom = [0] * len(levels)
        for category in categories:
            values = [(scores[protocol].get(level, {}).get("errors") or {}).get(category, 0) for level in levels]
            ax.bar(levels, values, bottom=bottom, label=category)
            bottom = [b + v for b, v in zip(bottom, values)]
        ax.set_title(f"error categories ({protocol})")
        ax.set_ylabel("API-call samples")
        if categories:
            ax.legend(fontsize=6)
        else:
            ax.text(0.5, 0.5, "no errors", ha="center", va="center", transform=ax.transAxes)
    fig.tight_layout()
    with atomic_path(path) as temporary:
        fig.savefig(temporary, dpi=120)
    plt.close(fig)


def _plot_apis(rates: list[dict[str, Any]], protocol: str, path: Path, top: int = 20) -> None:
    import matplotlib.pyplot as plt

    shown = rates[:top][::-1]
    fig, ax = plt.subplots(figsize=(6, 0.3 * max(4, len(shown)) + 1))
    ax.barh([e["api"] for e in shown], [100 * e["rate"] for e in shown])
    for y, entry in enumerate(shown):
        ax.text(100 * entry["rate"] + 1, y, f"{entry['errors']}/{entry['calls']}", va="center", fontsize=7)
    ax.set_xlim(0, 115)
    ax.set_xlabel("error rate (%)")
    ax.set_title(f"per-API error rate ({protocol}, top {min(top, len(rates))})")
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    with atomic_path(path) as temporary:
        fig.savefig(temporary, dpi=120)
    plt.close(fig)


def usage_section(usage: Mapping[str, Any]) -> list[str]:
    """The report's usage table: tokens, generation time, throughput and cost (nothing when unmeasured)."""
    if not usage:
        return []
    names = [
        ("samples", "samples"),
        ("samples with token counts", "samples_with_token_counts"),
        ("prompt tokens", "prompt_tokens"),
        ("generated tokens", "generated_tokens"),
        ("generation seconds (sum over samples)", "seconds"),
        ("wall seconds (this run)", "wall_seconds"),
        ("samples/s", "samples_per_second"),
        ("generated tokens/s", "generated_tokens_per_second"),
        ("price per million tokens (prompt, generated)", "price_per_mtok"),
        ("cost", "cost"),
    ]
    rows = [f"| {label} | {usage[key]} |" for label, key in names if usage.get(key) is not None]
    return ["## Usage", "", "| measure | value |", "|---|---|", *rows, ""]


def write_report(
    results: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    output_dir: str | os.PathLike[str],
    *,
    protocol: str = "paper",
) -> Path:
    """Write ``report.md`` and its plots into ``output_dir``; returns the report's path."""
    import matplotlib

    matplotlib.use("Agg", force=True)

    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    scores = results["scores"]
    levels = _levels(scores)
    protocols = _protocols(scores)
    protocol = protocol if protocol in protocols else (protocols[0] if protocols else protocol)
    rates = api_error_rates(scores, rows, protocol)
    _plot_accuracy(scores, levels, protocols, output_dir / PLOTS["accuracy"])
    _plot_errors(scores, levels, protocols, output_dir / PLOTS["errors"])
    _plot_apis(rates, protocol, output_dir / PLOTS["apis"])

    model = results.get("model", {})
    settings = [
        ("model", model.get("id")),
        ("model revision", model.get("revision")),
        ("backend", shown_setting(model.get("backend"))),
        ("dtype", model.get("dtype")),
        ("prompt format", shown_setting(results.get("format"))),
        ("batch size", results.get("batch_size")),
        ("decoding", results.get("decoding")),
        ("upstream data revision (GitHub commit)", results.get("dataset", {}).get("upstream_revision")),
        ("samples", results.get("counts")),
        ("subset", (subset_flags(results) or True) if results.get("subset") else False),
        ("row audit version", (results.get("audit") or {}).get("version")),
        ("chat template SHA-256", model.get("chat_template_sha256")),
        ("versions", results.get("versions")),
        ("apibank version", results.get("apibank_version")),
    ]
    lines = [
        f"# API-Bank results: {model.get('id')}{subset_label(results)}",
        "",
        "| setting | value |",
        "|---|---|",
        *[f"| {name} | `{value}` |" for name, value in settings],
        "",
        *usage_section(results.get("usage") or {}),
        "## Scores" + (f" of the subset ({subset_flags(results)}), not the full benchmark" if results.get("subset")
                       and subset_flags(results) else ""),
        "",
        markdown_table(scores, levels, intervals=True),
        "",
        INTERVAL_NOTE,
        "",
    ]
    for name, text in (results.get("protocols") or {}).items():
        lines.append(f"- **{name}**: {text}")
    lines += [
        "",
        "API call accuracy counts duplicate samples as the paper does; ROUGE-L is the `rouge` 1.0.1 F "
        "score the original evaluators report (levels 1/2 rounded per sample, level 3 after stripping "
        "`User:`/`AI:`).",
        "",
        *(verified_section(results.get("verified"), levels) if not results.get("audit_subset") else []),
        "## Per-level accuracy",
        "",
        f"![per-level accuracy]({PLOTS['accuracy']})",
        "",
        "## Error categories",
        "",
        f"![error categories]({PLOTS['errors']})",
        "",
        "| protocol | level | category | samples |",
        "|---|---|---|---|",
    ]
    for name in protocols:
        for level in levels:
            for category, count in sorted((scores[name].get(level, {}).get("errors") or {}).items()):
                lines.append(f"| {name} | {level} | {category} | {count} |")
    lines += ["", *error_section(scores, levels, protocols)]
    lines += [
        "",
        f"## Per-API error rates ({protocol} protocol)",
        "",
        f"![per-API error rates]({PLOTS['apis']})",
        "",
        "| API | errors | calls | error rate |",
        "|---|---|---|---|",
        *[f"| {e['api']} | {e['errors']} | {e['calls']} | {100 * e['rate']:.1f}% |" for e in rates],
        "",
    ]
    path = output_dir / REPORT_FILE
    atomic_write_text(path, "\n".join(lines))
    return path
