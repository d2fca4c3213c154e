"""Where the tests find the repository and their files."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
# Real chat templates of open tool-calling models, copied verbatim with provenance (see PROVENANCE.md there).
REAL_TEMPLATES_DIR = TEMPLATES_DIR / "real"


def whole_message(line: str) -> str:
    """A one-line CLI error with the whole message it names put back (a long one, e.g. with the long temporary
    paths of parallel test workers, is cut and written to a file)."""
    import re

    found = re.search(r" \(the whole message: (\S+)\)$", line)
    return line if found is None else line[:line.index(": error: ") + 9] + Path(found.group(1)).read_text().strip()
