"""Paired comparison of runs over the same samples: ``apibank compare``.

For each protocol, level and metric present in both runs, on the samples both scored:

* the difference B - A of the scores;
* a 95% paired interval for it: the dialogue-cluster bootstrap of :mod:`apibank.judge.intervals`
  applied to the per-sample differences (both runs resampled with the same dialogues, so what they
  share cancels);
* ``p``: an exact two-sided sign test on the per-sample outcomes. For 0/1 verdicts it is the exact
  McNemar test: only the discordant samples (right in one run, wrong in the other) carry
  information, and under "no difference" each is equally likely to favour either run, so the count
  favouring B is Binomial(discordant, 1/2). For ROUGE-L the signs of the non-zero differences are
  tested the same way. Exact rather than asymptotic because discordant counts are often small;
  ``p_dialogues`` repeats the test on per-dialogue summed differences, the cluster-robust
  counterpart (rows of one dialogue are not independent);
* the samples that flipped, counted by verdict category (the failing run's) and tool (the tool the
  succeeding run called, which for a correct call is the gold tool);
* ``mdd``: the smallest difference this level can detect at its size, 5% two-sided with 80% power:
  2.8 times the bootstrap standard error of the paired difference, and for 0/1 verdicts never below
  the smallest difference the exact test can call significant at all (6 discordant samples, all one
  way, over the level's samples). Where no difference within the scale can be detected (fewer samples
  than the exact test needs, or a smallest detectable difference over the whole 0-1 scale) ``mdd`` is
  None and ``mdd_reason`` says so, rather than a figure over 100 points.

Runs are compared only when they describe the same experiment apart from the model: same data
revision, protocols, prompt format and subset (classic runs) or setting, trials and limits
(agentic runs). Otherwise :class:`RunMismatch` says what differs, unless ``allow_mismatch``, which
compares the samples they share and lists the differences in the output. A setting a run did not
record (``apibank score`` of a file that does not say its prompt format) is unknown: listed under
``unknown``, never a difference.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from math import comb
from typing import Any, Callable, Sequence

import numpy as np

from apibank.judge.intervals import bracket, no_interval_reason, percentile_interval, resample_weights
from apibank.report.runs import BINARY_METRICS, RECORDED_IF_KNOWN, Run, Sample
from apibank.report.table import shown_setting

ALPHA = 0.05
POWER_FACTOR = 1.959964 + 0.841621  # z(0.975) + z(0.80)
METRIC_ORDER = {"api": 0, "dialogue": 1, "success": 2, "response": 3}
TOLERANCE = 1e-9  # ROUGE-L differences below this are ties


class RunMismatch(ValueError):
    """The runs do not describe the same experiment (or share no samples)."""


def sign_test(favour_b: int, favour_a: int) -> float:
    """Exact two-sided p-value of ``favour_b`` successes in ``favour_b + favour_a`` fair coin flips."""
    total = favour_b + favour_a
    if total == 0:
        return 1.0
    tail = sum(comb(total, i) for i in range(min(favour_b, favour_a) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**total)))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values, in their given order: the i-th smallest of m is
    multiplied by m - i + 1 (i from 1), kept at least as large as the adjusted ones before it and capped at 1.
    Controls the chance of any false "significant" over the family (e.g. every pair of a leaderboard table)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for step, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - step) * p_values[index]))
        adjusted[index] = running
    return adjusted


def smallest_significant_count(alpha: float = ALPHA) -> int:
    """The fewest discordant samples, all one way, that the exact test calls significant (6 at 5%)."""
    count = 1
    while sign_test(count, 0) > alpha:
        count += 1
    return count


def format_p(p: float) -> str:
    """A p-value as a plain number: 1.0, 0.031, 3.2e-15."""
    if p >= 1:
        return "1.0"
    text = f"{p:.2g}"
    return text if any(c in text for c in ".e") else text + ".0"


def differences(a: Run, b: Run) -> list[str]:
    """What differs between the runs' experiments, one phrase each (empty when comparable); a setting
    one run did not record is unknown, not different (:func:`unknowns`)."""
    out = []
    mine, theirs = a.identity(), b.identity()
    unknown = a.unrecorded() | b.unrecorded()
    for key in dict.fromkeys([*mine, *theirs]):
        if key not in unknown and mine.get(key) != theirs.get(key):
            out.append(f"{key}: {mine.get(key)!r} vs {theirs.get(key)!r}")
    unequal = []
    for key in sorted(set(a.samples) | set(b.samples), key=_order):
        left, right = set(a.samples.get(key, ())), set(b.samples.get(key, ()))
        if left != right:
            unequal.append(f"{'/'.join(key)}: {len(left)} vs {len(right)}, {len(left & right)} shared")
    if unequal:
        shown = "; ".join(unequal[:3]) + (f"; and {len(unequal) - 3} more" if len(unequal) > 3 else "")
        out.append(f"scored samples differ in {len(unequal)} protocol/level/metric groups ({shown})")
    return out


def unknowns(a: Run, b: Run) -> list[str]:
    """The settings either run did not record, one phrase each: they may differ, nobody knows."""
    mine, theirs = a.identity(), b.identity()
    return [f"{key} not recorded in {' and '.join(name for name, run in (('A', a), ('B', b)) if key in run.unrecorded())} "
            f"({shown_setting(mine[key])} vs {shown_setting(theirs[key])}): compared as unknown, not as different"
            for key in RECORDED_IF_KNOWN if key in a.unrecorded() | b.unrecorded()]


def _order(key: tuple[str, str, str]) -> tuple:
    protocol, level, metric = key
    return ({"paper": 0, "corrected": 1}.get(protocol, 2), protocol, level, METRIC_ORDER.get(metric, 9), metric)


def paired(key: tuple[str, str, str], a: Run, b: Run) -> dict[str, Any] | None:
    """The paired comparison of ``b`` against ``a`` on one (protocol, level, metric) over the samples both
    scored (None when they share none): the entry :func:`compare_runs` lists and the leaderboard's matrix uses."""
    protocol, level, metric = key
    shared = sorted(set(a.samples[key]) & set(b.samples[key]))
    if not shared:
        return None
    left = [a.samples[key][s] for s in shared]
    right = [b.samples[key][s] for s in shared]
    x = np.array([s.value for s in left])
    y = np.array([s.value for s in right])
    diff = y - x
    clusters = sorted({s.cluster for s in left})
    index = {name: i for i, name in enumerate(clusters)}
    positions = np.array([index[s.cluster] for s in left])
    cluster_diff = np.bincount(positions, weights=diff, minlength=len(clusters))
    cluster_size = np.bincount(positions, minlength=len(clusters)).astype(float)
    weights = resample_weights(len(clusters), f"compare/{level}")
    with np.errstate(invalid="ignore", divide="ignore"):
        replicated = (weights @ cluster_diff) / (weights @ cluster_size)
    spread = float(np.nanstd(replicated))
    binary = metric in BINARY_METRICS
    favour_b = int((diff > TOLERANCE).sum())
    favour_a = int((diff < -TOLERANCE).sum())
    least = smallest_significant_count()
    floor = least / len(shared) if binary else 0.0
    mdd = max(POWER_FACTOR * spread, floor)
    undetectable = len(shared) < least or mdd > 1  # both metrics lie in 0-1: no difference could reach it
    reason = no_interval_reason(len(clusters))  # one dialogue: every resample is the same
    entry: dict[str, Any] = {
        "protocol": protocol, "level": level, "metric": metric,
        "n": len(shared), "clusters": len(clusters),
        "a": float(x.mean()), "b": float(y.mean()), "difference": float(diff.mean()),
        "ci95": None if reason else percentile_interval(replicated),
        "p": sign_test(favour_b, favour_a),
        "p_dialogues": sign_test(int((cluster_diff > TOLERANCE).sum()), int((cluster_diff < -TOLERANCE).sum())),
        "favour_b": favour_b, "favour_a": favour_a,
        "se": round(spread, 12),
        "mdd": None if undetectable else round(mdd, 12),
    }
    if reason is not None:
        entry["ci95_reason"] = reason
    if undetectable:
        entry["mdd_reason"] = (f"n={len(shared)}: too few samples to detect any difference (the smallest "
                               "detectable one would exceed the whole scale; the exact test needs at least "
                               f"{least} samples, all one way)")
    if binary:
        flips = []
        for sample, l, r in zip(shared, left, right):
            if l.value == r.value:
                continue
            gained = r.value > l.value
            (good_run, good), bad = ((b, r), l) if gained else ((a, l), r)
            flips.append({"id": sample, "direction": "gained" if gained else "lost", "category": bad.category,
                          "tool": _flip_tool(good_run, good, bad, protocol, level)})
        entry["flipped"] = {
            direction: {
                "by_category": dict(Counter(f["category"] or "-" for f in flips if f["direction"] == direction).most_common()),
                "by_tool": dict(Counter(f["tool"] or "-" for f in flips if f["direction"] == direction).most_common()),
            }
            for direction in ("gained", "lost")
        }
        entry["flipped_samples"] = flips
    entry["line"] = summary_line(entry)
    return entry


def _flip_tool(good_run: Run, good: Sample, bad: Sample, protocol: str, level: str) -> str | None:
    """The tool of a flipped sample: what the succeeding run called (the gold tool, when its call is
    correct); for a level-3 dialogue, what it called at the row where the other run first went wrong."""
    if bad.row is not None:
        call = good_run.samples.get((protocol, level, "api"), {}).get(bad.row)
        if call is not None and call.tool:
            return call.tool
    return good.tool or bad.tool


def _scale(entry: dict[str, Any]) -> tuple[float, str]:
    return (100.0, " points") if entry["metric"] in BINARY_METRICS else (1.0, "")


def summary_line(entry: dict[str, Any]) -> str:
    """One line per comparison, e.g. ``paper level-1 api: B-A = -2.51 points [-4.0, -1.0], p=0.0039 ...``."""
    scale, unit = _scale(entry)
    return (f"{entry['protocol']} {entry['level']} {entry['metric']}: B-A = {scale * entry['difference']:+.4g}{unit} "
            f"{_shown_interval(entry, lambda bound: f'{scale * bound:+.4g}')}, p={format_p(entry['p'])} "
            f"(n={entry['n']}, {entry['favour_b']} favour B, {entry['favour_a']} favour A, "
            f"{_shown_mdd(entry, lambda mdd: f'mdd {scale * mdd:.3g}{unit}')})")


# what the mdd column shows where no difference can be detected at the level's size
NO_MDD = "n too small"


def _shown_mdd(entry: dict[str, Any], form: Callable[[float], str]) -> str:
    return NO_MDD + " to detect any difference" if entry["mdd"] is None else form(entry["mdd"])


def regressions(comparison: dict[str, Any], points: float, alpha: float = ALPHA) -> list[dict[str, Any]]:
    """The entries where B is worse than A by more than ``points`` (accuracy points; ROUGE-L x 100) and
    the paired test says so at ``alpha``, worst first: what a pipeline's regression gate fails on."""
    worse = [entry for entry in comparison["comparisons"]
             if -100.0 * entry["difference"] > points and entry["p"] < alpha]
    return sorted(worse, key=lambda entry: entry["difference"])


def _shown_interval(entry: dict[str, Any], form: Callable[[float], str]) -> str:
    return bracket(entry["ci95"], entry.get("ci95_reason"), form) or "-"


def compare_runs(a: Run, b: Run, *, allow_mismatch: bool = False) -> dict[str, Any]:
    """The paired comparison of ``b`` against ``a`` (see the module docstring)."""
    if a.kind != b.kind:
        raise RunMismatch(f"{a.path} is a {a.kind} run, {b.path} is a run of the other kind ({b.kind}): they share "
                          "no metric; compare "
                          "runs of the same kind (apibank evaluate/score folders, or apibank agent folders)")
    differs = differences(a, b)
    if differs and not allow_mismatch:
        # what differs and what to do first: the console shows a long line's start and end only
        setup = [d for d in differs if not d.startswith("scored samples")] or ["the scored samples"]
        samples = [d for d in differs if d.startswith("scored samples")]
        raise RunMismatch(f"the runs differ ({'; '.join(setup)}): pass --allow-mismatch to compare their shared "
                          "samples, or compare runs of the same data, protocols, prompt format and subset"
                          + "".join(f"; {d}" for d in samples) + f" ({a.path} vs {b.path})")
    keys = sorted(set(a.samples) & set(b.samples), key=_order)
    comparisons = [entry for entry in (paired(key, a, b) for key in keys) if entry is not None]
    if not comparisons:
        raise RunMismatch(f"{a.path} and {b.path} share no scored samples: nothing to compare")
    return {
        "a": {"path": str(a.path), "model": (a.results.get("model") or {}).get("id"), "kind": a.kind},
        "b": {"path": str(b.path), "model": (b.results.get("model") or {}).get("id"), "kind": b.kind},
        "mismatch": differs,
        "unknown": unknowns(a, b),
        "method": {
            "difference": "B - A on the samples both runs scored (accuracy in 0-1 units, ROUGE-L 0-1)",
            "ci95": "percentile bootstrap over dialogues (episodes), both runs resampled together",
            "p": "exact two-sided sign test on per-sample outcomes (exact McNemar for 0/1 verdicts)",
            "p_dialogues": "the same test on per-dialogue summed differences",
            "mdd": "2.8 x bootstrap SE of the paired difference (5% two-sided, 80% power); for 0/1 verdicts at "
                   "least 6/n, the smallest difference the exact test can call significant; null, with mdd_reason, where no "
                   "difference within the scale can be detected",
        },
        "comparisons": comparisons,
    }


def text_table(comparison: dict[str, Any]) -> str:
    """The comparison as a text table (stdout)."""
    headers = ["protocol", "level", "metric", "n", "A", "B", "B-A", "95% CI", "p", "+B/+A", "mdd"]
    body = []
    for entry in comparison["comparisons"]:
        scale, _ = _scale(entry)
        digits = 2 if scale == 100 else 4
        body.append([
            entry["protocol"], entry["level"], entry["metric"] + (" %" if scale == 100 else ""), str(entry["n"]),
            f"{scale * entry['a']:.{digits}f}", f"{scale * entry['b']:.{digits}f}",
            f"{scale * entry['difference']:+.{digits}f}", _shown_interval(entry, lambda bound: f"{scale * bound:+.{digits}f}"),
            f"p={format_p(entry['p'])}", f"{entry['favour_b']}/{entry['favour_a']}",
            NO_MDD if entry["mdd"] is None else f"{scale * entry['mdd']:.{digits}f}",
        ])
    widths = [max(len(line[i]) for line in [headers, *body]) for i in range(len(headers))]
    lines = [f"A: {comparison['a']['path']} ({shown_setting(comparison['a']['model'])})",
             f"B: {comparison['b']['path']} ({shown_setting(comparison['b']['model'])})"]
    lines += [f"mismatch (compared anyway): {item}" for item in comparison["mismatch"]]
    lines.append("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in body]
    return "\n".join(lines + undetectable_note(comparison))


def undetectable_note(comparison: dict[str, Any]) -> list[str]:
    """One line saying in how many rows of the comparison no difference can be detected, or none."""
    rows = [entry for entry in comparison["comparisons"] if entry["mdd"] is None]
    if not rows:
        return []
    return [f"{NO_MDD}: in {len(rows)} of {len(comparison['comparisons'])} rows no difference can be detected at "
            "their size (the smallest detectable one would exceed 100 points; the exact test needs at least "
            f"{smallest_significant_count()} samples, all one way)"]


def markdown(comparisons: Sequence[dict[str, Any]]) -> str:
    """All comparisons as a Markdown report: tables, method, flipped samples by category and tool."""
    lines = ["# API-Bank run comparison", ""]
    for comparison in comparisons:
        lines += [f"## B = `{comparison['b']['path']}` ({shown_setting(comparison['b']['model'])}) vs "
                  f"A = `{comparison['a']['path']}` ({shown_setting(comparison['a']['model'])})", ""]
        lines += [f"- mismatch (compared anyway): {item}" for item in comparison["mismatch"]]
        lines += [f"- {item}" for item in comparison["unknown"]]
        lines += ["| protocol | level | metric | n | A | B | B-A | 95% CI | p | p (dialogues) | favour B / A | mdd |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for entry in comparison["comparisons"]:
            scale, _ = _scale(entry)
            digits = 2 if scale == 100 else 4
            shown = _shown_interval(entry, lambda bound: f"{scale * bound:+.{digits}f}")
            mdd = NO_MDD if entry["mdd"] is None else f"{scale * entry['mdd']:.{digits}f}"
            lines.append(
                f"| {entry['protocol']} | {entry['level']} | {entry['metric']}{' %' if scale == 100 else ''} | "
                f"{entry['n']} | {scale * entry['a']:.{digits}f} | {scale * entry['b']:.{digits}f} | "
                f"{scale * entry['difference']:+.{digits}f} | {shown} | "
                f"{format_p(entry['p'])} | {format_p(entry['p_dialogues'])} | {entry['favour_b']} / {entry['favour_a']} | "
                f"{mdd} |")
        lines += [f"\n{line}" for line in undetectable_note(comparison)]
        lines += ["", "### Flipped samples", "", "| protocol | level | metric | direction | by category | by tool |",
                  "|---|---|---|---|---|---|"]
        for entry in comparison["comparisons"]:
            for direction, counts in (entry.get("flipped") or {}).items():
                if counts["by_category"]:
                    lines.append(
                        f"| {entry['protocol']} | {entry['level']} | {entry['metric']} | {direction} in B | "
                        + ", ".join(f"{k} {v}" for k, v in counts["by_category"].items()) + " | "
                        + ", ".join(f"{k} {v}" for k, v in counts["by_tool"].items()) + " |")
        lines.append("")
    method = comparisons[0]["method"] if comparisons else {}
    lines += ["## Method", "", *[f"- **{name}**: {text}" for name, text in method.items()], ""]
    return "\n".join(lines)
