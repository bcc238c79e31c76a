"""The subject's line recorder: which lines of the changed production files ran (standard library only).

Loaded by ``server.py`` from its own folder and started before production is
imported, so import-time lines count too.  No trace function: ``start`` wraps
``SourceFileLoader.exec_module`` so that a module whose file is one of the named
files runs code compiled from its source with a probe before every statement
(``__gate_lines__[k] = 1``, a store into a list preallocated for that file and
put into the module's namespace, with the statement's line number).  Every other
module loads as it would without coverage (its cached bytecode, no probe), so
the cost falls on the named files only; ``sys.settrace`` on CPython 3.11 would
slow every frame of the process.  The named files are always compiled from
source, and no bytecode is written for them.  The list lives in memory, so every
connection's process and twin inherits through ``fork`` the lines its ancestors
ran.

Which lines a probe stands for: the executable lines (the same reading as
``rules/coverage.py``: the line tables of the compiled source, docstrings
excepted) of its statement's own parts, not of the statements nested in it.  A
multi-line statement's lines count when the statement starts, except the parts
Python may skip or run later, which get a probe of their own in the expression
(``__gate_lines__.__setitem__(k, 1) or part``) when they start on a line of
their own: a lambda's body, a comprehension's element and conditions, both arms
of ``a if c else b``, the operands after the first of ``and``/``or``.  An
``except`` clause's or a ``case``'s header counts when its body starts.

Where the probe cannot apply, the file is reported as unmeasured (no lines: a
changed line there counts as never run, so the gate says ``review``), never
traced another way: a named file executed other than through a
``SourceFileLoader``'s ``exec_module`` (``runpy``, which takes ``get_code``;
``exec`` of its text; a custom loader or import hook of production's own), or
whose instrumented compile fails.  Imports through the path finder, by
``importlib.util.spec_from_file_location``, ``importlib.reload`` and a second
import under another name all pass there.  ``__main__`` and ``.pth`` files do
not arise in the subject (``server.py`` is ``__main__``; it runs with ``-S``),
and a namespace package has no file to change.

This is production's process: what it reports is production's own report.  A
hostile patch can switch it off (its lines then count as never run) or fake it;
the gate says so wherever it shows the result.
"""

from __future__ import annotations

import ast
import importlib.machinery
import types
from collections.abc import Iterable
from typing import Any

MAX_LINES = 200_000  # a report larger than this is cut (the evaluator bounds what it reads, too)
PROBE = "__gate_lines__"  # the module global holding its file's probe list (no mangling: ends in __)
Span = tuple[str, int | None]  # a field of a node, and the index in it when the field is a list
BLOCKS = ("body", "orelse", "finalbody")
SCOPES = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)  # the statements that may have a docstring


def executable_lines(source: bytes, filename: str) -> frozenset[int] | None:
    """The lines of ``source`` that carry code (as ``rules/coverage.executable_lines``), or None."""
    parsed = _parsed(source, filename)
    return None if parsed is None else parsed[1]


def _parsed(source: bytes, filename: str) -> tuple[ast.Module, frozenset[int]] | None:
    """``source``'s tree (parsed once) and its executable lines, or None when it does not compile."""
    try:
        tree = ast.parse(source, filename)
        code = compile(tree, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    lines: set[int] = set()
    stack = [code]
    while stack:
        co = stack.pop()
        lines.update(line for _start, _end, line in co.co_lines() if line is not None and line > 0)
        stack.extend(c for c in co.co_consts if isinstance(c, types.CodeType))
    scopes: list[ast.AST] = [tree]
    scopes.extend(s for s in _statements(tree.body) if isinstance(s, SCOPES))
    for node in scopes:  # docstrings (only a module, class or function has one: all statements)
        body = getattr(node, "body", None)
        if body and _is_docstring(body[0]):
            first = body[0]
            lines.difference_update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return tree, frozenset(lines)


def _statements(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """Every statement in ``body``, nested ones too (no expression holds a statement)."""
    stack = list(body)
    while stack:
        stmt = stack.pop()
        yield stmt
        for field in BLOCKS:
            value = getattr(stmt, field, None)
            if isinstance(value, list):
                stack.extend(value)
        for clause in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
            stack.extend(clause.body)


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _lazy_fields(node: ast.AST) -> list[Span]:
    """The parts of an expression that may run later, many times or not at all."""
    if isinstance(node, ast.Lambda):
        return [("body", None)]
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        return [("elt", None)]
    if isinstance(node, ast.DictComp):
        return [("key", None), ("value", None)]
    if isinstance(node, ast.IfExp):
        return [("body", None), ("orelse", None)]
    if isinstance(node, ast.BoolOp):
        return [("values", i) for i in range(1, len(node.values))]
    if isinstance(node, ast.comprehension):
        return [("ifs", i) for i in range(len(node.ifs))]
    return []


ANNOTATIONS = ("annotation", "returns")  # never rewritten: a string under ``from __future__ import annotations``
LAZY = frozenset({ast.Lambda, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp, ast.IfExp, ast.BoolOp,
                  ast.comprehension})  # the node types ``_lazy_fields`` names parts of
UNLOCATED = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)  # no line, no parts
NESTED = (ast.stmt, ast.excepthandler, ast.match_case)  # parts with probes of their own


class Instrumenter:
    """One file's source rewritten with probes, and the lines each probe stands for."""

    def __init__(self, executable: frozenset[int]) -> None:
        self.executable = executable
        self.sites: list[frozenset[int]] = []
        self.spans: list[tuple[int, int, int]] = []  # statement sites: (first line, last line, site)

    def site(self, lines: Iterable[int]) -> int | None:
        owned = frozenset(lines) & self.executable
        if not owned:
            return None
        self.sites.append(owned)
        return len(self.sites) - 1

    def own(self, node: ast.AST, lines: set[int], lazies: list[tuple[ast.AST, str, int | None]],
            annotation: bool = False) -> None:
        """The lines of ``node``'s own parts (not its nested statements), and its lazy parts (not walked)."""
        start = getattr(node, "lineno", None)
        if start is not None:
            lines.add(start)
        lazy = _lazy_fields(node) if not annotation and type(node) in LAZY else ()
        leaf = True
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                items: Iterable[tuple[int | None, Any]] = enumerate(value)
            elif isinstance(value, ast.AST):
                items = ((None, value),)
            else:
                continue
            inner = annotation or field in ANNOTATIONS
            for index, child in items:
                if not isinstance(child, ast.AST) or isinstance(child, UNLOCATED):
                    continue
                if leaf and hasattr(child, "lineno"):
                    leaf = False
                if isinstance(child, NESTED):
                    continue
                if lazy and (field, index) in lazy:
                    lazies.append((node, field, index))
                else:
                    self.own(child, lines, lazies, inner)
        end = getattr(node, "end_lineno", None)
        if leaf and start is not None and end is not None:
            if end != start:
                lines.update(range(start, end + 1))
        elif type(node) is ast.Attribute and end is not None:
            lines.add(end)  # ``x\n.name``: the attribute's load carries the name's line

    def block(self, body: list[ast.stmt], docstring: bool = False, module: bool = False) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        rest = list(body)
        if docstring and rest and _is_docstring(rest[0]):
            out.append(rest.pop(0))
        if module:  # ``from __future__`` imports stay first; they ran once anything after them runs
            future: set[int] = set()
            while rest and isinstance(rest[0], ast.ImportFrom) and rest[0].module == "__future__":
                self.own(rest[0], future, [])
                out.append(rest.pop(0))
            k = self.site(future)
            if k is not None:
                out.append(self.probe(k, out[-1], out[-1].lineno))
        for stmt in rest:
            k = self.statement(stmt)
            if k is not None:
                first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
                out.append(self.probe(k, stmt, first))
            out.append(stmt)
        return out

    def statement(self, stmt: ast.stmt) -> int | None:
        lines: set[int] = set()
        lazies: list[tuple[ast.AST, str, int | None]] = []
        self.own(stmt, lines, lazies)
        k = self.site(lines)
        first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
        if k is not None:
            self.spans.append((first, stmt.end_lineno or stmt.lineno, k))
        for parent, field, index in lazies:
            self.lazy(parent, field, index, lines)
        scope = isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        for field in BLOCKS:
            value = getattr(stmt, field, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                setattr(stmt, field, self.block(value, docstring=scope and field == "body"))
        for handler in getattr(stmt, "handlers", ()):
            self.header(handler, handler, handler.lineno)
        for case in getattr(stmt, "cases", ()):
            self.header(case, case.pattern, case.pattern.lineno)
        return k

    def header(self, clause: Any, located: ast.AST, line: int) -> None:
        """An ``except`` or ``case`` clause: its header's lines count when its body starts."""
        lines: set[int] = set()
        lazies: list[tuple[ast.AST, str, int | None]] = []
        self.own(clause, lines, lazies)
        k = self.site(lines)
        for parent, field, index in lazies:
            self.lazy(parent, field, index, lines)
        body = self.block(clause.body)
        clause.body = [self.probe(k, located, line), *body] if k is not None else body

    def lazy(self, parent: ast.AST, field: str, index: int | None, outer: set[int]) -> None:
        """Give a lazy part a probe of its own when it has lines its statement does not."""
        node = getattr(parent, field) if index is None else getattr(parent, field)[index]
        lines: set[int] = set()
        lazies: list[tuple[ast.AST, str, int | None]] = []
        self.own(node, lines, lazies)
        k = self.site(lines - outer)
        for p, f, i in lazies:
            self.lazy(p, f, i, outer | lines)
        if k is None:
            return
        call = ast.Call(ast.Attribute(ast.Name(PROBE, ast.Load()), "__setitem__", ast.Load()),
                        [ast.Constant(k), ast.Constant(1)], [])
        wrapped = ast.BoolOp(ast.Or(), [call, node])
        for n in ast.walk(wrapped):
            if n is not node and not isinstance(n, (ast.Load, ast.Or)):
                ast.copy_location(n, node)
                n.end_lineno, n.end_col_offset = node.lineno, node.col_offset  # type: ignore[attr-defined]
        ast.copy_location(wrapped, node)
        if index is None:
            setattr(parent, field, wrapped)
        else:
            getattr(parent, field)[index] = wrapped

    @staticmethod
    def probe(k: int, where: ast.AST, line: int) -> ast.stmt:
        """``__gate_lines__[k] = 1`` on ``line``, at ``where``'s column."""
        target = ast.Subscript(ast.Name(PROBE, ast.Load()), ast.Constant(k), ast.Store())
        stmt = ast.Assign([target], ast.Constant(1))
        col = getattr(where, "col_offset", 0)
        for n in (stmt, target, target.value, target.slice, stmt.value):
            n.lineno, n.end_lineno, n.col_offset, n.end_col_offset = line, line, col, col
        return stmt

    def unowned(self) -> None:
        """A line no probe stands for goes to the innermost statement around it (none is expected)."""
        owned = frozenset().union(*self.sites)
        extra: dict[int, set[int]] = {}
        for line in self.executable - owned:
            around = [(last - first, -k, k) for first, last, k in self.spans if first <= line <= last]
            if around:
                extra.setdefault(min(around)[2], set()).add(line)
        for k, lines in extra.items():
            self.sites[k] = self.sites[k] | lines


def instrument(source: bytes, filename: str) -> tuple[types.CodeType, list[frozenset[int]]] | None:
    """``source`` compiled with its probes, and the lines of each; None when it cannot be (unmeasured).

    Every node the probes add carries its location, so the tree compiles as it is."""
    parsed = _parsed(source, filename)
    if parsed is None:
        return None
    tree, executable = parsed
    inst = Instrumenter(executable)
    tree.body = inst.block(tree.body, docstring=True, module=True)
    inst.unowned()
    return compile(tree, filename, "exec", dont_inherit=True), inst.sites


class Unit:
    """One load of a named file: its instrumented code, its probe list, what each probe stands for."""

    def __init__(self, name: str, code: types.CodeType, sites: list[frozenset[int]]) -> None:
        self.name, self.code, self.sites = name, code, sites
        self.probes: list[int] = [0] * len(sites)

    def hits(self) -> set[tuple[str, int]]:
        return {(self.name, line) for k, hit in enumerate(self.probes) if hit for line in self.sites[k]}


class Tracer:
    """Lines executed in the named files, per file."""

    def __init__(self, files: Iterable[str]) -> None:
        self.files = frozenset(files)
        self.units: dict[tuple[str, bytes], Unit | None] = {}
        self.imported: frozenset[tuple[str, int]] = frozenset()
        self.original: Any = None

    def start(self) -> None:
        """From here on, a named file loaded through a ``SourceFileLoader`` runs with its probes."""
        if not self.files or self.original is not None:
            return
        loader_class = importlib.machinery.SourceFileLoader
        original = self.original = loader_class.exec_module
        files, unit_for = self.files, self.unit

        def exec_module(loader: Any, module: types.ModuleType) -> None:
            path = getattr(loader, "path", None)
            unit = unit_for(path, loader) if path in files else None
            if unit is None:
                original(loader, module)
                return
            module.__dict__[PROBE] = unit.probes
            exec(unit.code, module.__dict__)  # production's own module, as the loader would run it

        setattr(loader_class, "exec_module", exec_module)  # noqa: B010 - a method replaced on the class

    def stop(self) -> None:
        """No more probes in modules loaded from here on (those loaded keep theirs)."""
        if self.original is not None:
            setattr(importlib.machinery.SourceFileLoader, "exec_module", self.original)  # noqa: B010
            self.original = None

    def unit(self, path: str, loader: Any) -> Unit | None:
        """The instrumented load of ``path`` (one per distinct source: a reload of the same text shares it)."""
        try:
            source = loader.get_data(path)
        except OSError:
            return None
        key = (path, source)
        if key not in self.units:
            try:
                built = instrument(source, path)
            except Exception:  # an instrumentation failure leaves the file unmeasured, never production broken
                built = None
            self.units[key] = Unit(path, *built) if built is not None else None
        return self.units[key]

    @property
    def hits(self) -> set[tuple[str, int]]:
        """Every ``(file, line)`` run in this process (and its ancestors) so far."""
        out: set[tuple[str, int]] = set()
        for unit in self.units.values():
            if unit is not None:
                out |= unit.hits()
        return out

    def mark_imported(self) -> None:
        """What ran so far ran while the fork server imported production, before any property."""
        self.imported = frozenset(self.hits)

    def report(self) -> dict[str, dict[str, list[int]]]:
        """``{"lines": every line run in this process so far, "import": those run at the fork server's import}``."""
        return {"lines": self.lines(self.hits), "import": self.lines(self.imported)}

    @staticmethod
    def lines(hits: Iterable[tuple[str, int]]) -> dict[str, list[int]]:
        """``{file: sorted line numbers}``."""
        out: dict[str, list[int]] = {}
        for count, (name, line) in enumerate(sorted(hits)):
            if count >= MAX_LINES:
                break
            if line > 0:  # a module's first event can carry line 0
                out.setdefault(name, []).append(line)
        return out
