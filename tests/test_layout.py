"""The layout: ``apibank_tools`` is the tool environment alone, ``apibank`` the benchmark on top of it.

Every import statement counts, also those inside functions and ``if TYPE_CHECKING:`` blocks, so neither
an upward import nor a cycle can hide behind a lazy import. The rooms' floors are written once, in ``FLOORS``.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = {"apibank_tools": REPO / "tools", "apibank": REPO / "apibank"}
# The top-level modules users import (thin faces over the package); nothing in a package imports them.
FACES = ("apibank_dataset", "apibank_metric", "apibank_generate", "apibank_cli")


def _module_name(package: str, root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([package, *parts])


def _modules() -> dict[str, Path]:
    found = {}
    for package, root in PACKAGES.items():
        for path in root.rglob("*.py"):
            found[_module_name(package, root, path)] = path
    for face in FACES:
        found[face] = REPO / f"{face}.py"
    return found


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Modules of both packages that ``name`` imports (resolving relative imports)."""
    is_package = path.name == "__init__.py"
    package_parts = name.split(".") if is_package else name.split(".")[:-1]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        candidates: list[str] = []
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[: len(package_parts) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            candidates = [module] + [f"{module}.{alias.name}" for alias in node.names]
        for candidate in candidates:
            # the longest known module the import names (a package's attribute may be a function)
            while candidate and candidate not in known:
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate != name:
                targets.add(candidate)
    return targets


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, set(modules)) for name, path in modules.items()}


# The floors, lowest first. A module may import its own room and any room on a lower floor; an import
# of a room on its own floor or a higher one fails. A room is a module prefix: the longest one that
# matches names a module's room.
FLOORS: tuple[tuple[str, ...], ...] = (
    # the executable tool environment: knows nothing of the benchmark built on it
    ("apibank_tools",),
    # typed user errors: what every room raises, importing nothing
    ("apibank.errors",),
    # facts (levels, protocols, formats), the call notation, atomic files, the one JSON-lines reader and the
    # output folder's file names: what every room reads, importing none of them but the errors
    ("apibank.benchmark", "apibank.notation", "apibank.files"),
    # one run per output folder: the lock and the record of the folder's kind of run, by the files' names;
    # vLLM's platform plugin (vLLM loads it in each of its processes): the facts alone
    ("apibank.run_folder", "apibank.vllm_cpu_ray"),
    # upstream data: dialogues, rows, episodes, rendered prompts
    ("apibank.data",),
    # judging calls against gold (and the intervals around a score) and the model layer: neither
    # needs the other, so the metric ships without a model and generation without a judge
    ("apibank.judge", "apibank.generate"),
    # agentic episodes (the model layer drives the tools, the judge's ROUGE-L and intervals grade
    # them) and training rows (the model layer's conversations)
    ("apibank.agent", "apibank.train"),
    # the audit of the test rows: its checks read the rows and execute gold calls through the judge
    ("apibank.audit",),
    # reports read run folders (classic and agentic) and the model layer's predictions files
    ("apibank.report",),
    # the Hub: result files use the report's table, the dataset repository the training export;
    # it knows output folders only by apibank.files' names, never through the pipeline
    ("apibank.hub",),
    # whole runs: the pipeline (classic and agentic: generation or episodes, scores, every output
    # file, publishing) and inspect-ai's tasks, two ways into the same floors below
    ("apibank.pipeline", "apibank.evals"),
    # the command line: parses, checks before any work, prints
    ("apibank.cli",),
    # the public API (the package itself: score, iter_rows): for users, so no room imports it
    ("apibank",),
    # the thin top-level faces over the package (apibank_metric serves the public API's score)
    FACES,
)


def _floor_of(module: str) -> tuple[int, str]:
    """``(floor, room)`` of a module: the longest room prefix that names it."""
    rooms = [(len(room), floor, room) for floor, rooms in enumerate(FLOORS) for room in rooms
             if module == room or (room != "apibank" and module.startswith(room + "."))]
    assert rooms, f"{module} is on no floor: add its room to FLOORS in tests/test_layout.py"
    _, floor, room = max(rooms)
    return floor, room


def test_every_import_goes_down_a_floor(graph):
    upward = []
    for name, targets in sorted(graph.items()):
        floor, room = _floor_of(name)
        for target in sorted(targets):
            target_floor, target_room = _floor_of(target)
            if target_room != room and target_floor >= floor:
                upward.append(f"{name} (floor {floor}) imports {target} (floor {target_floor})")
    assert not upward, "imports that do not go down a floor:\n" + "\n".join(upward)


def test_the_floor_check_sees_each_kind_of_import(tmp_path):
    """An upward import, one on the same floor, a lazy one and a type-only one all count."""
    assert _floor_of("apibank.agent.episode_runner") == (6, "apibank.agent")
    assert _floor_of("apibank") == (len(FLOORS) - 2, "apibank")
    assert _floor_of("apibank_cli") == (len(FLOORS) - 1, "apibank_cli")
    assert _floor_of("apibank.benchmark")[0] < _floor_of("apibank.data")[0]
    code = (
        "from typing import TYPE_CHECKING\n"
        "from apibank.data.rows import load\n"
        "if TYPE_CHECKING:\n    from apibank.report.html import page\n"
        "def f():\n    from ..generate import runner\n"
    )
    modules = {"apibank.judge.sample", "apibank.data.rows", "apibank.report.html", "apibank.generate",
               "apibank.generate.runner", "apibank.judge"}
    path = tmp_path / "sample.py"
    path.write_text(code, "utf-8")
    found = _imports("apibank.judge.sample", path, modules)
    assert found == {"apibank.data.rows", "apibank.report.html", "apibank.generate", "apibank.generate.runner"}
    floor = _floor_of("apibank.judge.sample")[0]
    assert [t for t in sorted(found) if _floor_of(t)[0] >= floor and _floor_of(t)[1] != "apibank.judge"] == [
        "apibank.generate", "apibank.generate.runner", "apibank.report.html"]


def test_no_package_module_imports_the_faces(graph):
    assert all((REPO / f"{face}.py").is_file() for face in FACES)
    inward = {(name, target) for name, targets in graph.items() if name not in FACES
              for target in targets if target in FACES}
    assert not inward


def test_no_import_cycle_in_either_package(graph):
    # Importing a package's submodule runs the package's __init__ first, but that edge is the
    # interpreter's, not a dependency the code declares; only declared imports are followed.
    colour: dict[str, int] = defaultdict(int)  # 0 new, 1 on the stack, 2 done
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        colour[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if colour[target] == 1:
                cycles.append(stack[stack.index(target):] + [target])
            elif colour[target] == 0:
                visit(target, stack)
        stack.pop()
        colour[node] = 2

    for node in sorted(graph):
        if colour[node] == 0:
            visit(node, [])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


MODULE_LINES = 500


def test_modules_stay_within_the_house_size():
    """One concept a module keeps each one readable: none of either package over 500 lines."""
    long = {str(path.relative_to(REPO)): count for root in PACKAGES.values() for path in sorted(root.rglob("*.py"))
            if (count := len(path.read_text("utf-8").splitlines())) > MODULE_LINES}
    assert not long, f"modules over {MODULE_LINES} lines (split them by concept): {long}"


def test_tools_folder_holds_only_the_environment():
    assert not (REPO / "tools" / "generation").exists()
    assert not (REPO / "tools" / "cli").exists()
    names = {p.stem for p in (REPO / "tools").glob("*.py")}
    assert names == {"__init__", "base", "coercion", "data", "environment", "errors", "registry", "retrieval", "text"}


def test_public_api_at_the_top_of_the_package(data_dir):
    from apibank import iter_rows, score

    rows = list(iter_rows("level-1", data_dir))[:4]
    result = score([r["expected_output"] for r in rows], [r["reference"] for r in rows], data_dir=data_dir)
    for protocol in ("paper", "corrected"):
        level = result[protocol]["level-1"]
        assert level["api"]["total"] + level["response"]["count"] == 4
        assert level["api"]["correct"] == level["api"]["total"]


# ------------------------------------------------------------------------- judges never name a tool
# The rooms that judge calls and episodes: what they need to know about a tool, the tool declares.
JUDGING_ROOMS = (REPO / "apibank" / "judge", REPO / "apibank" / "agent")
# A test helper that adds a deliberate extra gold call of a named tool; it belongs with the tests.
NOT_SCANNED = {REPO / "apibank" / "agent" / "mutations.py"}
TOOL_MODULES = ("apibank_tools.level12", "apibank_tools.level3")


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _tool_references(path: Path, tools: set[str], searcher: str) -> list[tuple[int, str]]:
    """Code in ``path`` that names an individual tool, as (line, what): an identifier, a string used
    as data (no whitespace: a key, a table name, ``Tool.attribute``), or one tool's module. Prose
    (docstrings, comments, messages) may mention tools as examples. The searcher is a benchmark
    concept, allowed only as the value of a ``SEARCHER`` constant."""
    tree = ast.parse(path.read_text("utf-8"))
    docstrings = _docstrings(tree)
    allowed = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
               and [getattr(t, "id", None) for t in node.targets] == ["SEARCHER"]}
    names = tools | {searcher}
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [(line, f"imports {m}") for m in modules if m.startswith(TOOL_MODULES)]
        elif isinstance(node, ast.Name) and node.id in names:
            found.append((line, f"identifier {node.id}"))
        elif isinstance(node, ast.Attribute) and node.attr in names:
            found.append((line, f"attribute {node.attr}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value
            if text.startswith(TOOL_MODULES):
                found.append((line, f"module {text}"))
            elif (not any(c.isspace() for c in text) and id(node) not in allowed
                  and set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)) & names):
                found.append((line, f"string {text!r}"))
    return sorted(found)


def test_judges_and_agents_name_no_tool():
    from apibank_tools.registry import TOOLSETS

    from apibank.benchmark import SEARCHER

    tools = {name for tools in TOOLSETS.values() for name in tools.names()} - {SEARCHER}
    assert len(tools) > 60
    found = [
        f"{path.relative_to(REPO)}:{line} {what}"
        for room in JUDGING_ROOMS
        for path in sorted(room.rglob("*.py"))
        if path not in NOT_SCANNED
        for line, what in _tool_references(path, tools, SEARCHER)
    ]
    assert not found, "judging code names individual tools (declare the property on the tool instead):\n" + "\n".join(found)


def test_the_tool_scan_sees_what_it_must(tmp_path):
    """The scan above finds each way code can name a tool, and leaves prose alone."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""Docstrings may mention Dictionary."""\n'
        "from apibank_tools.level12.dictionary import recorded_entries\n"
        'EFFECTS = frozenset({"SendEmail"})\n'
        'NOT_STATE = {"FlightSearch.flights"}\n'
        'SEARCHER = "ToolSearcher"\n'
        'OTHER = "ToolSearcher"\n'
        'MESSAGE = "a hanging Calculator formula"\n'
        "import apibank_tools.level3.get_weather\n",
        "utf-8",
    )
    found = _tool_references(sample, {"Dictionary", "SendEmail", "FlightSearch", "Calculator"}, "ToolSearcher")
    assert found == [
        (2, "imports apibank_tools.level12.dictionary"),
        (3, "string 'SendEmail'"),
        (4, "string 'FlightSearch.flights'"),
        (6, "string 'ToolSearcher'"),
        (8, "imports apibank_tools.level3.get_weather"),
    ]


def test_tests_mirror_the_rooms_and_helpers_live_in_tests_support():
    tests = REPO / "tests"
    rooms = {p.name for p in (REPO / "apibank").iterdir() if p.is_dir() and (p / "__init__.py").exists()} | {"tools"}
    folders = {p.name for p in tests.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))} - {"support"}
    assert folders <= rooms, f"test folders that name no room of the package: {sorted(folders - rooms)}"
    # what only tests use (tiny models, stand-in servers, mutations of gold trajectories) is not shipped
    assert not list((REPO / "apibank").rglob("tiny.py")) and not list((REPO / "apibank").rglob("mutations.py"))
    assert (tests / "support" / "tiny.py").is_file() and (tests / "support" / "hub_standin.py").is_file()


COUNT_CHROMIUM = """
import sys
import pytest

class Count:
    found = 0

    def pytest_collection_modifyitems(self, items):
        Count.found = sum(any("Chromium" in str(mark.kwargs.get("reason", "")) for mark in item.iter_markers("skipif"))
                          for item in items)

pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "tests"], plugins=[Count()])
print("found", Count.found)
"""


def test_the_docs_count_the_tests_that_skip_without_chromium():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", COUNT_CHROMIUM], cwd=REPO, capture_output=True, text=True, timeout=600)
    found = int(done.stdout.strip().splitlines()[-1].split()[-1])
    assert found > 0, done.stdout[-2000:]
    said = {}
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"(\d+) tests? (?:that need it )?skip|skip \((\d+) tests\)|(\d+) tests are skipped|"
                                 r"the (\d+) viewer tests", text):
            said[f"{path.name}: {match.group(0)}"] = int(next(group for group in match.groups() if group))
    assert said and set(said.values()) == {found}, (found, said)
