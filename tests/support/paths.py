"""Where the tests find the repository and their files."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
# Real chat templates of open tool-calling models, copied verbatim with provenance (see PROVENANCE.md there).
REAL_TEMPLATES_DIR = TEMPLATES_DIR / "real"
