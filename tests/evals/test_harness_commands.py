"""The README's lm-evaluation-harness and lighteval lines are the commands their documentation pages give
(the pages' commands are the ones measured there): the same program, arguments and environment, so that a
fix to one cannot leave the other behind (the README's lighteval line once lacked ``batch_size=1`` and was
killed for memory on a 24 GiB machine)."""

from __future__ import annotations

import re
import shlex

import pytest
from support.paths import REPO

HARNESSES = {  # the program's words that mark its command line, and the documentation page
    "lm-eval": (("lm_eval", "run"), "docs/lm-eval.md"),
    "lighteval": (("python", "-m", "apibank.evals.lighteval", "accelerate"), "docs/lighteval.md"),
}
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def bash_blocks(path: str) -> list[list[list[str]]]:
    """Each ```bash block of ``path`` as its commands, each one shell line (backslash continuations joined)
    split into words, comments dropped."""
    text = (REPO / path).read_text(encoding="utf-8")
    blocks = re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M)
    return [[shlex.split(line, comments=True) for line in block.replace("\\\n", " ").splitlines() if line.strip()]
            for block in blocks]


def harness_command(path: str, program: tuple[str, ...]) -> tuple[dict[str, str], list[str]]:
    """The one command of ``path`` that runs ``program``: its environment (the ``VAR=value`` words before it
    and the block's ``export`` lines above it) and its words from the program on."""
    found = []
    for block in bash_blocks(path):
        exported: dict[str, str] = {}
        for words in block:
            if words[:1] == ["export"]:
                exported.update(word.split("=", 1) for word in words[1:])
                continue
            start = next((i for i in range(len(words)) if tuple(words[i:i + len(program)]) == program), None)
            if start is not None and all(ASSIGNMENT.match(word) for word in words[:start]):
                found.append(({**exported, **dict(word.split("=", 1) for word in words[:start])}, words[start:]))
    assert len(found) == 1, f"{path}: {len(found)} commands run {' '.join(program)}"
    return found[0]


@pytest.mark.parametrize("harness", sorted(HARNESSES))
def test_the_readme_runs_each_harness_as_its_page_does(harness):
    program, page = HARNESSES[harness]
    readme_env, readme_words = harness_command("README.md", program)
    page_env, page_words = harness_command(page, program)
    assert readme_words == page_words, harness
    assert readme_env == page_env, harness


def test_the_harness_lines_take_the_folder_apibank_convert_prints():
    for path in ("README.md", "docs/lm-eval.md", "docs/lighteval.md"):
        assignments = [words for block in bash_blocks(path) for words in block
                       if words and words[0].startswith("MODEL_FOLDER=")]
        assert len(assignments) == 1 and assignments[0][:2] == ["MODEL_FOLDER=$(apibank", "convert"], path
    _, lighteval = harness_command("README.md", HARNESSES["lighteval"][0])
    assert "batch_size=1" in lighteval[4].split(",")  # lighteval's batch search on a CPU outgrows 24 GiB
