"""Adopting a test suite: which tests the oracle tree has, which the catalog names, entries for the rest.

Pure functions over ``{path: bytes}`` maps (a work tree, the index or a
revision, read by the caller); ``ast`` only, so the commit hooks can use it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from mergegate.records import catalog, nodeids, yamlio
from mergegate.records.policy import ORACLE, PRODUCTION, Policy


@dataclass(frozen=True)
class Problem:
    """A catalog entry that names no test: where, what, and the fix."""

    source: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line else self.source
        return f"{where}: {self.message}"


def oracle_tests(files: Mapping[str, bytes], policy: Policy) -> list[nodeids.Test]:
    """Tests pytest's conventions find in the oracle tree's test files (``test_*.py``, ``*_test.py``;
    unparsable files are skipped)."""
    found: list[nodeids.Test] = []
    for path in sorted(files):
        if nodeids.is_test_file(path) and policy.classify(path) == ORACLE:  # the files pytest collects
            try:
                found.extend(nodeids.discover(path, files[path]))
            except nodeids.NodeIdError:
                continue
    return found


def unresolved(cat: catalog.Catalog, files: Mapping[str, bytes],
               line_of: Callable[[catalog.Property], int | None]) -> list[Problem]:
    """Every catalog entry whose node id names no test in ``files``."""
    problems = []
    for prop in cat.properties:
        source = files.get(prop.oracle_file)
        if source is None:
            problems.append(Problem(prop.source, line_of(prop), f"oracle file {prop.oracle_file} does not exist"))
            continue
        try:
            nodeids.resolve(prop.node_id, source)
        except nodeids.NodeIdError as exc:
            problems.append(Problem(prop.source, line_of(prop), str(exc)))
    return problems


def entry_line(files: Mapping[str, bytes]) -> Callable[[catalog.Property], int | None]:
    """The line of an entry's ``oracle:`` key in its catalog file (for messages)."""
    def line(prop: catalog.Property) -> int | None:
        return yamlio.load(files[prop.source], prop.source).line(("oracle",)) if prop.source in files else None

    return line


def _base(node_id: nodeids.NodeId) -> str:
    return "::".join((node_id.file, *node_id.names))


def status(cat: catalog.Catalog, tests: Sequence[nodeids.Test]) -> list[nodeids.Test]:
    """The tests no catalog entry names (an entry for ``f::t[x]`` or ``f::C`` counts for what it selects)."""
    named = [_base(p.node_id) for p in cat.properties]
    return [t for t in tests if not any(str(t.nodeid) == n or str(t.nodeid).startswith(n + "::") for n in named)]


# ---------------------------------------------------------------- new entries


def claim_for(test: nodeids.Test) -> str:
    """The docstring's first line, or the name in words (``test_total_is_sum`` -> "total is sum")."""
    first = test.doc.strip().splitlines()[0].strip() if test.doc.strip() else ""
    if first:
        return first[:200]
    words = [re.sub(r"^test_?|^Test", "", n).replace("_", " ").strip() for n in test.nodeid.names]
    return ": ".join(w for w in words if w) or str(test.nodeid)


def entry_id(test: nodeids.Test, taken: set[str]) -> str:
    """``<file stem without test_>.<Class>.<test>``, made unique against ``taken``."""
    stem = test.nodeid.file.rpartition("/")[2].removesuffix(".py")
    stem = re.sub(r"^test_|_test$", "", stem) or stem
    base = ".".join((stem, *(re.sub(r"^test_", "", n) or n for n in test.nodeid.names)))
    base = re.sub(r"[^A-Za-z0-9_.\-]", "_", base).strip("._-") or "test"
    pid, n = base, 2
    while pid.lower() in taken:
        pid, n = f"{base}-{n}", n + 1
    return pid


def covers_for(source: bytes, production: Sequence[str], roots: Sequence[str]) -> list[str]:
    """Production files the test file imports (``from shop.tax import f`` -> ``src/shop/tax.py``);
    a package's ``__init__.py`` stands for the package (``src/shop/**``)."""
    present = frozenset(production)
    out: list[str] = []
    for module in nodeids.imported_modules(source):
        rel = module.replace(".", "/")
        for root in roots:
            prefix = f"{root}/{rel}" if root else rel
            if f"{prefix}.py" in present:
                out.append(f"{prefix}.py")
                break
            if f"{prefix}/__init__.py" in present:
                out.append(f"{prefix}/**")
                break
    # a module already covered by its package's glob adds nothing
    globs = [c[:-3] for c in out if c.endswith("/**")]
    return sorted({c for c in out if c.endswith("/**") or not any(c.startswith(g + "/") for g in globs)})


@dataclass(frozen=True)
class NewEntry:
    pid: str
    path: str
    text: bytes
    test: nodeids.Test


def plan_entries(cat: catalog.Catalog, tests: Sequence[nodeids.Test], files: Mapping[str, bytes],
                 every: frozenset[str], policy: Policy, existing_paths: frozenset[str]) -> list[NewEntry]:
    """An entry per test no entry names yet; never an id or a file that exists."""
    from mergegate.drafter.accept import entry_text
    from mergegate.runner.trees import import_roots

    production = [p for p in every if policy.classify(p) == PRODUCTION]
    roots = import_roots(policy.paths.production, every.__contains__)
    taken = {p.id.lower() for p in cat.properties}
    taken |= {p.rpartition("/")[2].rsplit(".", 1)[0].lower() for p in existing_paths}
    out = []
    cat_dir = policy.paths.catalog.rstrip("/")
    covers_of: dict[str, list[str]] = {}  # per test file: parsed once, not once per test in it
    for test in status(cat, tests):
        pid = entry_id(test, taken)
        taken.add(pid.lower())
        file = test.nodeid.file
        if file not in covers_of:
            covers_of[file] = covers_for(files.get(file, b""), production, roots)
        covers = covers_of[file]
        text = entry_text(pid, str(test.nodeid), claim_for(test), covers)
        path = f"{cat_dir}/{pid}.yaml"
        catalog.parse_entry(text, path)  # our own output must load
        out.append(NewEntry(pid, path, text, test))
    return out
