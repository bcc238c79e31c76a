"""The package's layout is its architecture: packages by concept, arrows inward, no import circles.

Every import counts: top-level, inside functions, and under ``TYPE_CHECKING``.  ``from a import b``
is an import of the module ``a.b`` when there is one, else of ``a``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "mergegate"
TOP_MODULES = {"__init__", "__main__", "main", "errors", "textsafe"}
PACKAGES = {"commands", "rules", "records", "git", "pipeline", "runner", "hooks", "drafter", "demo", "templates",
            "ci"}  # ci: where the gate runs (CI, the job's own definition) and what it prints there
MAX_LINES = 400


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if "project" in parts and "demo" in parts:
            continue  # the demo's example project is data, not the package
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _nearest(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(name: str) -> set[str]:
    """The package's modules ``name`` imports, anywhere in its source."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(m for a in node.names if (m := _nearest(a.name)) and a.name.startswith("mergegate"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            if not base.startswith("mergegate"):
                continue
            for alias in node.names:
                target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else _nearest(base)
                if target:
                    out.add(target)
    out.discard(name)
    return out


GRAPH = {name: imports_of(name) for name in MODULES}


def _cycles() -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(GRAPH)))
    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return found


def test_the_walker_sees_the_package() -> None:
    assert "mergegate.rules.verdicts" in MODULES and "mergegate.runner.trusted.evaluator" in MODULES
    assert "mergegate.rules.freezes" in GRAPH["mergegate.records.ledger"]  # a plain top-level import
    assert "mergegate.runner.trusted.session" in GRAPH["mergegate.runner.trusted.evaluator"]  # inside a function


def test_no_import_circles() -> None:
    assert _cycles() == []


def test_a_circle_would_be_found() -> None:
    """The check can fail: a circle added to the graph is reported."""
    GRAPH["mergegate.rules.globs"].add("mergegate.rules.pathclass")
    try:
        assert ["mergegate.rules.globs", "mergegate.rules.pathclass"] in _cycles()
    finally:
        GRAPH["mergegate.rules.globs"].discard("mergegate.rules.pathclass")


def test_pure_rules_import_only_each_other_and_the_standard_library() -> None:
    bad = {}
    for name in MODULES:
        if not name.startswith("mergegate.rules"):
            continue
        outside = {m for m in GRAPH[name] if not m.startswith("mergegate.rules")}
        tree = ast.parse(MODULES[name].read_text())
        for node in ast.walk(tree):
            tops = ([a.name for a in node.names] if isinstance(node, ast.Import)
                    else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
            outside.update(t for t in tops if t.split(".")[0] not in sys.stdlib_module_names
                           and not t.startswith("mergegate"))
        if outside:
            bad[name] = sorted(outside)
    assert bad == {}


def test_package_faces_import_nothing_of_their_own_package() -> None:
    """A package's ``__init__`` that imports its modules imports the modules that import it back."""
    bad = {name: sorted(m for m in GRAPH[name] if m.startswith(name + "."))
           for name, path in MODULES.items() if path.name == "__init__.py"}
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_top_level_is_packages_by_concept() -> None:
    top = {p.stem for p in PACKAGE.glob("*.py")}
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    assert top == TOP_MODULES
    assert folders == PACKAGES


def test_no_module_is_over_400_lines() -> None:
    long = {name: n for name, path in MODULES.items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}
