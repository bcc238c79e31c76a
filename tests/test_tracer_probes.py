"""Issue 24, item 1: the subject's line recorder compiles only the changed files with probes (``subject/tracer.py``).

Each test imports a small file the way production is imported (the path finder, or
``spec_from_file_location``), runs parts of it, and compares the lines reported with the
lines the gate counts as executable (``rules/coverage.executable_lines``).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import os
import runpy
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mergegate.rules import coverage
from mergegate.runner.subject import tracer as tracerlib
from mergegate.runner.subject.tracer import Tracer

ROOT = Path(__file__).resolve().parents[1]


class Loaded:
    """A folder on ``sys.path`` whose named files are traced; everything undone afterwards."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.tracer: Tracer | None = None
        self.names: list[str] = []

    def write(self, name: str, text: str) -> Path:
        path = self.folder / f"{name}.py"
        path.write_text(textwrap.dedent(text))
        return path

    def start(self, *files: Path) -> Tracer:
        self.tracer = Tracer([str(f) for f in files])
        self.tracer.start()
        return self.tracer

    def load(self, name: str) -> Any:
        self.names.append(name)
        return importlib.import_module(name)

    def ran(self, path: Path) -> set[int]:
        assert self.tracer is not None
        return set(self.tracer.report()["lines"].get(str(path), []))

    def at_import(self, path: Path) -> set[int]:
        assert self.tracer is not None
        return set(self.tracer.report()["import"].get(str(path), []))


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Loaded]:
    loaded = Loaded(tmp_path)
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    try:
        yield loaded
    finally:
        if loaded.tracer is not None:
            loaded.tracer.stop()
        sys.path.remove(str(tmp_path))
        for name in loaded.names:
            sys.modules.pop(name, None)


def line_of(path: Path, text: str, nth: int = 0) -> int:
    found = [i for i, t in enumerate(path.read_text().splitlines(), 1) if t.strip() == text]
    return found[nth]


def executable(path: Path) -> frozenset[int]:
    lines = coverage.executable_lines(path.read_bytes())
    assert lines is not None
    return lines


def test_a_changed_line_in_a_function_counts_once_the_function_runs(env: Loaded) -> None:
    path = env.write("probe_fn", """\
        def called(x):
            y = x + 1
            return y

        def not_called(x):
            return x - 1
        """)
    env.start(path)
    module = env.load("probe_fn")
    assert line_of(path, "y = x + 1") not in env.ran(path)
    assert module.called(1) == 2
    ran = env.ran(path)
    assert executable(path) - ran == {line_of(path, "return x - 1")}
    assert ran <= executable(path)
    assert sys.gettrace() is None  # no trace function: nothing else in the process pays


def test_class_body_decorator_and_multiline_statement_lines(env: Loaded) -> None:
    path = env.write("probe_shapes", """\
        import functools


        def wrap(
            tag,
        ):
            def deco(fn):
                return fn
            return deco


        class Shape:
            sides = 4
            name = str(
                sides,
            )

            @wrap(
                "area",
            )
            @functools.lru_cache(
                maxsize=None,
            )
            def area(self):
                total = (self.sides *
                         2 +
                         1)
                return total
        """)
    env.start(path)
    module = env.load("probe_shapes")
    assert module.Shape.name == "4"
    before = env.ran(path)
    for text in ("sides = 4", "name = str(", "sides,", '"area",', "maxsize=None,", "def area(self):"):
        assert line_of(path, text) in before, text  # class body, decorator and def lines run at import
    assert line_of(path, "total = (self.sides *") not in before
    assert module.Shape().area() == 9
    ran = env.ran(path)
    assert {line_of(path, "total = (self.sides *"), line_of(path, "2 +"), line_of(path, "return total")} <= ran
    assert ran == executable(path)  # everything ran


def test_parts_python_may_skip_count_only_when_they_run(env: Loaded) -> None:
    path = env.write("probe_lazy", """\
        def pick(flag, items):
            value = ("honest"
                     if flag else
                     "other")
            keys = sorted(items, key=lambda item:
                          -item)
            doubled = [item * 2
                       for item in items]
            either = (flag or
                      len(items))
            return value, keys, doubled, either
        """)
    env.start(path)
    module = env.load("probe_lazy")
    assert module.pick(True, []) == ("honest", [], [], True)
    ran = env.ran(path)
    skipped = {line_of(path, t) for t in ('"other")', "-item)", "len(items))")}
    assert {line_of(path, 'value = ("honest"'), line_of(path, "for item in items]")} <= ran
    assert not skipped & ran
    assert line_of(path, "doubled = [item * 2") in ran  # the comprehension's first line runs (empty or not)
    module.pick(False, [1, 2])
    assert env.ran(path) == executable(path)


def test_import_time_lines_are_told_apart_from_what_properties_run(env: Loaded) -> None:
    path = env.write("probe_import", """\
        LIMIT = 3
        if LIMIT > 2:
            MODE = "big"
        else:
            MODE = "small"

        def f():
            return LIMIT
        """)
    tracer = env.start(path)
    module = env.load("probe_import")
    tracer.mark_imported()
    module.f()
    imported, ran = env.at_import(path), env.ran(path)
    assert {line_of(path, "LIMIT = 3"), line_of(path, 'MODE = "big"'), line_of(path, "def f():")} <= imported
    assert line_of(path, "return LIMIT") in ran - imported
    assert line_of(path, 'MODE = "small"') not in ran
    assert set(tracer.report()) == {"lines", "import"}


def test_a_file_imported_twice_or_reloaded_keeps_counting(env: Loaded) -> None:
    path = env.write("probe_twice", """\
        def a():
            return 1

        def b():
            return 2
        """)
    env.start(path)
    first = env.load("probe_twice")
    first.a()
    again = importlib.reload(first)
    assert again is first and first.__dict__[tracerlib.PROBE] is not None
    spec = importlib.util.spec_from_file_location("probe_twice_other", path)  # the same file, another name
    assert spec is not None and spec.loader is not None
    other = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(other)
    other.b()
    ran = env.ran(path)
    assert {line_of(path, "return 1"), line_of(path, "return 2")} <= ran
    path.write_text(path.read_text() + "\ndef c():\n    return 3\n")  # production rewrites itself, reloads
    importlib.invalidate_caches()
    importlib.reload(first).c()
    assert line_of(path, "return 3") in env.ran(path)
    assert env.ran(path) <= executable(path)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_line_reached_only_through_a_fork_is_the_childs(env: Loaded) -> None:
    path = env.write("probe_fork", """\
        def parent_side():
            return "parent"

        def child_side():
            return "child"
        """)
    env.start(path)
    module = env.load("probe_fork")
    module.parent_side()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: as a subject's connection process, it inherits what its parent ran
        try:
            os.close(read)
            module.child_side()
            os.write(write, json.dumps(sorted(env.ran(path))).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = set(json.load(pipe))
    os.waitpid(pid, 0)
    assert {line_of(path, 'return "parent"'), line_of(path, 'return "child"')} <= child
    assert line_of(path, 'return "child"') not in env.ran(path)


def test_the_traced_file_is_compiled_from_source_and_no_bytecode_written(env: Loaded,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(sys, "pycache_prefix", None)
    path = env.write("probe_nopyc", "X = 1\n")
    env.write("probe_plain", "Y = 2\n")
    env.start(path)
    traced, plain = env.load("probe_nopyc"), env.load("probe_plain")
    assert traced.X == 1 and plain.Y == 2
    cache = env.folder / "__pycache__"
    assert not list(cache.glob("probe_nopyc.*")) and list(cache.glob("probe_plain.*"))
    assert tracerlib.PROBE not in vars(plain)  # every other module loads untouched
    path.write_text("X = 1\nZ = 3\n")  # a stale .pyc of the traced file would hide the change; none exists
    importlib.invalidate_caches()
    assert importlib.reload(traced).Z == 3 and line_of(path, "Z = 3") in env.ran(path)


def test_docstrings_future_imports_and_annotations_stay_as_written(env: Loaded) -> None:
    path = env.write("probe_doc", '''\
        """Module docstring."""
        from __future__ import annotations

        import dataclasses


        @dataclasses.dataclass
        class Point:
            """Class docstring."""

            x: int | None = None

            def norm(self, scale: float = 1.0) -> float:
                """Method docstring."""
                return (self.x or 0) * scale
        ''')
    env.start(path)
    module = env.load("probe_doc")
    assert module.__doc__ == "Module docstring." and module.Point.__doc__ == "Class docstring."
    assert module.Point.norm.__doc__ == "Method docstring."
    assert module.Point.__annotations__ == {"x": "int | None"}
    assert module.Point.norm.__annotations__ == {"scale": "float", "return": "float"}
    assert module.Point(2).norm(2.0) == 4.0
    assert env.ran(path) == executable(path)


def test_a_file_run_other_ways_is_unmeasured_not_broken(env: Loaded) -> None:
    """runpy takes ``get_code``, not ``exec_module``: the file runs as ever, and reports no lines."""
    path = env.write("probe_runpy", "def f():\n    return 5\nRESULT = f()\n")
    env.start(path)
    assert runpy.run_path(str(path))["RESULT"] == 5
    assert runpy.run_module("probe_runpy")["RESULT"] == 5
    assert env.ran(path) == set()


def test_stop_restores_the_loader() -> None:
    original = importlib.machinery.SourceFileLoader.exec_module
    tracer = Tracer(["/nonexistent/x.py"])
    tracer.start()
    assert importlib.machinery.SourceFileLoader.exec_module is not original
    tracer.stop()
    assert importlib.machinery.SourceFileLoader.exec_module is original
    Tracer([]).start()  # nothing named: nothing replaced
    assert importlib.machinery.SourceFileLoader.exec_module is original


def test_the_subjects_executable_lines_are_the_gates() -> None:
    """The subject keeps its own copy (standard library only); it must read every file as the gate does."""
    for path in sorted((ROOT / "src").rglob("*.py")):
        source = path.read_bytes()
        assert tracerlib.executable_lines(source, str(path)) == coverage.executable_lines(source, str(path)), path


def test_every_executable_line_of_the_projects_own_files_has_a_probe_of_its_own() -> None:
    """No line needs the fallback (the innermost statement around it) on this project's files."""
    for path in sorted((ROOT / "src").rglob("*.py")):
        source = path.read_bytes()
        lines = coverage.executable_lines(source)
        assert lines is not None, path
        inst, tree = tracerlib.Instrumenter(lines), ast.parse(source)
        tree.body = inst.block(tree.body, docstring=True, module=True)
        assert frozenset().union(*inst.sites) == lines, path
        compile(ast.fix_missing_locations(tree), str(path), "exec", dont_inherit=True)
