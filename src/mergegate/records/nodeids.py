"""Pytest node ids as oracles: parse one, resolve it in the oracle file's source, find the tests a file has.

Pure and light (``ast`` only, nothing imported from the test file): the commit
hooks use it to refuse a catalog entry that names no test, ``gate catalog
import``/``status`` to list the tests of an oracle tree, and the runner to plan
a plain test once per side (seeds do not apply to it).  The trusted evaluator
still collects the node id with pytest; this is the cheap, static reading of it.

Node ids are pytest's: ``path/to/test_x.py::test_y``, ``...::TestClass::test_y``,
``...::test_y[param-id]`` and ``...::TestMachine`` (a state machine's ``TestCase``).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

HYPOTHESIS = "hypothesis"  # a @given test or a state machine: the gate's seeds apply
PLAIN = "plain"  # a deterministic test: one run per side
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class NodeIdError(ValueError):
    """A node id that is malformed or names nothing in its file; ``str()`` says which and why."""


@dataclass(frozen=True)
class NodeId:
    file: str
    names: tuple[str, ...]  # Class, ..., function (or just the class)
    param: str = ""  # "[...]" or ""

    def __str__(self) -> str:
        return "::".join((self.file, *self.names)) + self.param

    @property
    def rest(self) -> str:
        return "::".join(self.names) + self.param


def parse(text: str) -> NodeId:
    """``file.py::A::b[x]`` -> NodeId; a NodeIdError says what is wrong."""
    file_, sep, rest = text.partition("::")
    if not sep or not file_.endswith(".py") or file_.startswith("/") or not rest \
            or any(part in ("", ".", "..") for part in file_.split("/")):
        raise NodeIdError(f"bad oracle {text!r}")
    names_text, bracket, param = rest.partition("[")
    if bracket and not param.endswith("]"):
        raise NodeIdError(f"bad oracle {text!r}: a parameter id ends with ']'")
    names = tuple(names_text.split("::"))
    if not all(_NAME.fullmatch(n) for n in names) or any(ord(c) < 32 for c in param):
        raise NodeIdError(f"bad oracle {text!r}")
    return NodeId(file_, names, f"[{param}" if bracket else "")


@dataclass(frozen=True)
class Test:
    """One test a file defines, as pytest would name it (parameters folded into the function)."""

    nodeid: NodeId
    kind: str
    doc: str
    line: int


def _decorators_mention(node: ast.AST, word: str) -> bool:
    for dec in getattr(node, "decorator_list", ()):
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == word:
            return True
    return False


def _is_machine_case(node: ast.AST | None) -> bool:
    """``TestX = Machine.TestCase``: a state machine run as a unittest case."""
    return isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute) and node.value.attr == "TestCase"


def _bases(node: ast.ClassDef) -> list[str]:
    out = []
    for base in node.bases:
        out.append(base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", ""))
    return out


def _bindings(body: list[ast.stmt]) -> dict[str, ast.AST]:
    """What each name of a module or class body is bound to (the last binding wins, as at import)."""
    out: dict[str, ast.AST] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                out[(alias.asname or alias.name).split(".")[0]] = node
    return out


def _kind(node: ast.AST) -> str:
    if _is_machine_case(node) or _decorators_mention(node, "given"):
        return HYPOTHESIS
    if isinstance(node, ast.ClassDef) and any("StateMachine" in b for b in _bases(node)):
        return HYPOTHESIS
    return PLAIN


def parse_source(source: bytes, path: str) -> ast.Module:
    """The file's syntax tree (shared: callers only read it; a catalog names one file many times)."""
    tree = _parsed(source)
    if isinstance(tree, SyntaxError):
        raise NodeIdError(f"{path}:{tree.lineno}: syntax error: {tree.msg}") from None
    if isinstance(tree, ValueError):  # NUL bytes
        raise NodeIdError(f"{path}: cannot be parsed: {tree}") from None
    return tree


@functools.lru_cache(maxsize=64)
def _parsed(source: bytes) -> ast.Module | SyntaxError | ValueError:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        return exc.with_traceback(None)  # kept without the parser's frames


def resolve(node_id: NodeId, source: bytes) -> str:
    """The kind of test ``node_id`` names in ``source`` (HYPOTHESIS or PLAIN); NodeIdError if it names none.

    A name bound by an import or an assignment, or a method a class may inherit
    (the class has bases), is taken on trust here; pytest decides when it runs.
    """
    scope = _bindings(parse_source(source, node_id.file).body)
    node: ast.AST | None = None
    for depth, name in enumerate(node_id.names):
        found = scope.get(name)
        if found is None:
            if _is_machine_case(node) or (isinstance(node, ast.ClassDef) and node.bases):
                return HYPOTHESIS  # runTest of a machine, or an inherited method: unknown, so every seed
            where = "::".join((node_id.file, *node_id.names[:depth])) if depth else node_id.file
            raise NodeIdError(f"{where} has no test {name!r}")
        node = found
        if isinstance(found, ast.ClassDef):
            scope = _bindings(found.body)
        elif depth < len(node_id.names) - 1 and not _is_machine_case(found):
            raise NodeIdError(f"{node_id}: {name!r} is not a class")
        else:
            scope = {}
    assert node is not None
    if isinstance(node, ast.ClassDef) and not any("StateMachine" in b for b in _bases(node)):
        return HYPOTHESIS if any(_kind(m) == HYPOTHESIS for m in _bindings(node.body).values()) else PLAIN
    return _kind(node)


def discover(path: str, source: bytes) -> list[Test]:
    """The tests pytest's default conventions find in one file (``test*`` functions, ``Test*`` classes
    and their ``test*`` methods, unittest cases, ``X = Machine.TestCase`` under any name)."""
    tree = parse_source(source, path)
    found: list[Test] = []
    for name, node in _bindings(tree.body).items():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and name.startswith("test"):
            found.append(Test(NodeId(path, (name,)), _kind(node), ast.get_docstring(node) or "", node.lineno))
        elif _is_machine_case(node):  # a unittest.TestCase: pytest collects it whatever its name
            found.append(Test(NodeId(path, (name,)), HYPOTHESIS, "", getattr(node, "lineno", 0)))
        elif isinstance(node, ast.ClassDef) and (name.startswith("Test") or "TestCase" in _bases(node)):
            if any("StateMachine" in b for b in _bases(node)):
                continue  # the machine itself is not a test; its TestCase assigned to a name is
            for member, item in _bindings(node.body).items():
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and member.startswith("test"):
                    found.append(Test(NodeId(path, (name, member)), _kind(item), ast.get_docstring(item) or "",
                                      item.lineno))
    return sorted(found, key=lambda t: t.line)


def imported_modules(source: bytes, members: bool = True) -> list[str]:
    """Absolute module names a file imports, in order, once each; with ``members``, ``from m import x``
    also gives ``m.x`` (x may be a submodule: ``covers`` wants it).  Unparsable source imports nothing."""
    return list(_imported(source, members))


@functools.lru_cache(maxsize=64)
def _imported(source: bytes, members: bool) -> tuple[str, ...]:
    tree = _parsed(source)
    if not isinstance(tree, ast.Module):
        return ()
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
            if members:
                names.extend(f"{node.module}.{a.name}" for a in node.names if a.name != "*")
    return tuple(dict.fromkeys(names))


def is_test_file(path: str, patterns: Iterable[str] = ("test_*.py", "*_test.py")) -> bool:
    import fnmatch

    base = path.rpartition("/")[2]
    return any(fnmatch.fnmatchcase(base, p) for p in patterns)
