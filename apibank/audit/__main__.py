"""``python -m apibank.audit build [--data-dir DIR] [--check]``: regenerate (or compare) the audit files."""

from __future__ import annotations

import argparse
import sys

from apibank.audit.build import build, render
from apibank.data.audits import AUDIT_DIR
from apibank.data.audits import AUDIT_META_FILE as SUMMARY_FILE
from apibank.data.audits import AUDIT_ROWS_FILE as AUDIT_FILE
from apibank.errors import UserError
from apibank.files import atomic_write_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m apibank.audit", description=__doc__)
    parser.add_argument("command", choices=["build"])
    parser.add_argument("--data-dir", default=None, help="the upstream API-Bank folder (default: $APIBANK_DATA_DIR)")
    parser.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    args = parser.parse_args(argv)
    try:
        audit, summary = build(args.data_dir)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    texts = dict(zip((AUDIT_FILE, SUMMARY_FILE), render(audit, summary)))
    if args.check:
        stale = [name for name, text in texts.items() if (AUDIT_DIR / name).read_text("utf-8") != text]
        if stale:
            print(f"the committed audit files differ from a fresh build: {stale}; run python -m apibank.audit build")
            return 1
        print(f"the audit files match a fresh build ({summary['rows']} rows)")
        return 0
    for name, text in texts.items():
        atomic_write_text(AUDIT_DIR / name, text)
    print(f"wrote {AUDIT_DIR / AUDIT_FILE} ({summary['rows']} rows) and {SUMMARY_FILE}: {summary['counts']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
