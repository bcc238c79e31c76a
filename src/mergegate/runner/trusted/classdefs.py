"""A class statement in the oracle that subclasses a production class: executed in the subject.

Its methods are then part of the system under test and run where production runs.
What the subject executes is the trusted tree's own text of the statement, read
here from the oracle file (never production text, never anything evaluated here):
the ``class`` node with its bases replaced by ``__gate_base_<n>`` (the production
classes), its decorators left to run here on the stand-in that comes back, and the
names its body uses sent along from the oracle's namespace: production objects as
handles, plain data by value, standard-library objects by name, the oracle's own
functions as callbacks.  A name that cannot cross is left out (a ``NameError`` in the
subject names it).  An oracle class handed to production as a value is copied the same way
(``mirror``).
"""

from __future__ import annotations

import ast
import copy
import sys
from typing import Any

from mergegate.runner.trusted import faults
from mergegate.runner.trusted.faults import SealedCallError
from mergegate.runner.trusted.link import Link

_trusted: list[str] = []  # the trusted tree's root (``standins.seal``)
_HERE = (__file__.rpartition("/")[0] + "/proxies.py", __file__)


def define(ch: Link, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> Any:
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename in _HERE:
        frame = frame.f_back  # type: ignore[assignment]
    filename = frame.f_code.co_filename if frame is not None else "?"
    if frame is None or not _is_trusted(filename):
        raise SealedCallError(f"class {name} subclasses a production class outside the trusted oracle tree "
                              f"({filename}): not supported sealed; mark the entry isolation: shared")
    tree = _parse(filename)
    node = _statement(tree, name, frame.f_lineno)
    if node is None:
        raise SealedCallError(f"class {name}: its statement was not found in {filename}; mark the entry "
                              "isolation: shared")
    module = str(namespace.get("__module__") or frame.f_globals.get("__name__") or "oracle")
    cls = _send(ch, tree, node, {**frame.f_globals, **frame.f_locals}, list(bases), module)
    cell = namespace.get("__classcell__")
    if cell is not None:
        cell.cell_contents = cls  # ``super()`` in the oracle's copy of the methods: never called here
    return cls


def mirror(ch: Link, cls: type) -> Any:
    """The subject's copy of an oracle class handed to production (``pmap_field(Something)``, an Enum), or None.

    Built the same way from the class statement's trusted text, once per class; its instances made
    here stay here (reverse handles), members of an oracle Enum cross as the copy's members.
    """
    known = ch.mirrors.get(id(cls))
    if known is not None:
        return known[1] if known[0] is cls else None
    module = sys.modules.get(type.__getattribute__(cls, "__module__"))
    filename = getattr(module, "__file__", None)
    if type(filename) is not str or not _is_trusted(filename) or module is None:
        return None
    tree = _parse(filename)
    found = _classes(tree, cls.__name__)
    bases = [b for b in cls.__bases__ if b is not object]
    if len(found) != 1:
        return None
    ch.mirrors[id(cls)] = (cls, None)  # a class whose body names itself: refused, not recursed
    try:
        made = _send(ch, tree, found[0], dict(vars(module)), bases, module.__name__)
    except SealedCallError as exc:
        faults.handled(exc)
        return None
    ch.mirrors[id(cls)] = (cls, made)
    return made


def _is_trusted(filename: str) -> bool:
    return any(filename.startswith(root.rstrip("/") + "/") for root in _trusted)


_parsed: dict[tuple[str, int, int], ast.Module] = {}  # a trusted file's tree, parsed once per process


def _parse(filename: str) -> ast.Module:
    """The file's syntax tree (shared: never modified; ``_send`` works on a copy of a class node)."""
    import os

    stat = os.stat(filename)
    key = (filename, stat.st_mtime_ns, stat.st_size)
    if key not in _parsed:
        with open(filename, encoding="utf-8") as fh:
            _parsed[key] = ast.parse(fh.read(), filename)
    return _parsed[key]


_class_nodes: dict[int, list[ast.ClassDef]] = {}  # by id of a tree ``_parsed`` keeps


def _classes(tree: ast.Module, name: str) -> list[ast.ClassDef]:
    """The tree's class statements named ``name`` (every class statement found once per tree)."""
    if id(tree) not in _class_nodes:
        _class_nodes[id(tree)] = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    return [n for n in _class_nodes[id(tree)] if n.name == name]


def _send(ch: Link, tree: ast.Module, node: ast.ClassDef, scope: dict[str, Any], bases: list[Any],
          module: str) -> Any:
    """Execute ``node`` in the subject: bases as references, the names its body uses sent along."""
    future = any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
                 and any(a.name == "annotations" for a in n.names) for n in tree.body)
    used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - {node.name}
    names = {}
    for used_name in sorted(used):
        if used_name in scope:
            try:
                names[used_name] = ch.enc(scope[used_name])
            except SealedCallError as exc:
                faults.handled(exc)
                continue  # cannot cross: the subject's NameError names it if the body needs it
    encoded_bases = ch.enc(bases)
    node = copy.copy(node)  # the parsed tree stays as it is (``_parse``): new lists for what changes
    node.decorator_list = []
    node.bases = [ast.Name(f"__gate_base_{i}", ast.Load()) for i in range(len(bases))]
    node.keywords = []
    source = ("from __future__ import annotations\n" if future else "") + ast.unparse(ast.fix_missing_locations(node))
    return ch.request("defclass", source, node.name, module, encoded_bases, ["d", *_flat(names)])


def _flat(names: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for key, value in names.items():
        out += [key, value]
    return out


def _statement(tree: ast.Module, name: str, line: int) -> ast.ClassDef | None:
    found = _classes(tree, name)
    for node in found:
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        if first <= line <= (node.end_lineno or node.lineno):
            return node
    return found[0] if len(found) == 1 else None
