"""How the trusted revision's own classes compare their objects, read from their source, never run.

A production class that defines ``__eq__`` or ``__lt__`` says what equality and order
mean for its objects (priority's ``Stream`` compares stream ids only; pyrsistent's bag
is unorderable).  The sealed evaluator never asks production, so it decided such
comparisons over the whole snapshot, and a real suite that relies on the class's own
meaning disagreed with plain pytest.  Where the *trusted* revision's definition is plain
enough to read, the evaluator follows it instead (``trusted/rules.py``): the rule comes
from source the patch cannot change, the values it compares from the snapshot, and the
comparison itself is the evaluator's own operator.

Recognised, per method (``__eq__``, ``__ne__``, ``__lt__``, ``__le__``, ``__gt__``, ``__ge__``):

- a *key* comparison, ``return K(self) <op> K(other)``, where ``K`` is the same expression
  on both sides built from attribute reads (``self.stream_id``), ``tuple(self)`` or
  ``list(self)`` (the items), tuples and lists of those, and the body of a method or
  property of the class that returns one (``self._key()``); optionally after a guard
  ``if not isinstance(other, C): return NotImplemented`` (or ``False``/``True``; also
  ``type(other) is not type(self)``, ``other.__class__ is not self.__class__``) or in
  the form ``return isinstance(other, C) and K(self) <op> K(other)``;
- a body that only raises ``TypeError`` (an unorderable class);
- a guard alone, before a body that is none of these (pyrsistent's ``plist.__eq__`` walks both
  lists): the guard's answer for an object that is not one of the classes, nothing otherwise;
- ``__ne__`` as ``return not self == other`` (or ``not self.__eq__(other)``);
- aliases in the class body (``__le__ = __lt__``), and ``functools.total_ordering``;
- what a plain ``@dataclass`` writes (``dataclass_rules.py``).

Anything else (a loop, a call, a constant answer, a method taken from another class)
is recorded as unknown: the evaluator then decides as before, over the snapshot.  Only
files that mention a comparison method are read (``PATTERN``), so a subclass in
another file is unknown too.  The table is JSON data::

    {"pkg.mod:Qual": {"bases": ["pkg.mod:Base", ...], "total": "lt" | None,
                      "methods": {"eq": rule, "lt": rule, ...}}}

with rules ``["key", op, guard, key]``, ``["guarded", guard]``, ``["raise", message]``, ``["not", "eq"]``
and ``["unknown"]``; a guard is ``None``, ``["isinstance", [class names], answer]`` (``"@self"``
is the object's own class) or ``["sametype", answer]``; a key is ``["self"]``,
``["attr", key, name]``, ``["items", key, "tuple" | "list"]`` or ``["tuple" | "list", key...]``.
A base that cannot be named is ``"?"``.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Callable
from typing import Any

from mergegate.runner import dataclass_rules

PATTERN = r"__(eq|ne|lt|le|gt|ge)__|total_ordering|dataclass"
_PATTERN = re.compile(PATTERN.encode())
METHODS = {"__eq__": "eq", "__ne__": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge"}
OPERATORS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
# Bases that define no comparison of their own: skipped when the evaluator walks a class's bases.
NEUTRAL = frozenset({"object", "Generic", "Protocol", "ABC", "abc.ABC", "typing.Generic", "typing.Protocol"}
                    | {n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)})
UNKNOWN = ["unknown"]
MAX_INLINE = 4
MAX_SOURCE = 4 << 20  # a bigger file (generated code) is not read: its classes keep the snapshot rule


def mentions(source: bytes) -> bool:
    """Whether a file may define a comparison (the only files ``read_module`` is worth running on)."""
    return _PATTERN.search(source) is not None


def module_name(path: str, root: str) -> str | None:
    """``src/pkg/mod.py`` under root ``src`` -> ``pkg.mod`` (``pkg/__init__.py`` -> ``pkg``)."""
    rel = path[len(root) + 1:] if root else path
    if (root and not path.startswith(root + "/")) or not rel.endswith(".py"):
        return None
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None


def read_module(module: str, source: bytes, package: bool = False) -> dict[str, Any]:
    """The table's rows for the classes of one module (top level and nested in classes); ``package`` for an
    ``__init__.py`` (its relative imports start at itself)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    names = _names(module if package else module.rpartition(".")[0], module, tree)
    patched = _patched(tree, names)
    out: dict[str, Any] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                qual = prefix + node.name
                row = out[f"{module}:{qual}"] = _read_class(node, names)
                for op in patched.get(f"{module}:{qual}", ()):
                    row["methods"][op] = UNKNOWN
                visit(node.body, qual + ".")
    visit(tree.body, "")
    return out


def _patched(tree: ast.Module, names: dict[str, str]) -> dict[str, set[str]]:
    """Comparison methods the module assigns onto a class after its statement (``C.__eq__ = f``)."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, ast.AugAssign | ast.AnnAssign) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr in METHODS:
                owner = _class_ref(target.value, names)
                out.setdefault(owner or "?", set()).add(METHODS[target.attr])
        if isinstance(node, ast.Call) and _is(node.func, "setattr") and node.args:
            owner = _class_ref(node.args[0], names)
            out.setdefault(owner or "?", set()).update(METHODS.values())
    return out


def _names(package: str, module: str, tree: ast.Module) -> dict[str, str]:
    """What a name at the module's top level refers to: ``module:Name`` for its own classes, the imported
    module's ``mod:Name`` for ``from mod import Name`` (relative imports resolved), ``mod`` for ``import mod``."""
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names[node.name] = f"{module}:{node.name}"
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[:max(len(parts) - (node.level - 1), 0)]
                base = ".".join([*parts, *([base] if base else [])])
            for alias in node.names:
                names[alias.asname or alias.name] = f"{base}:{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.partition(".")[0]] = alias.name if alias.asname else \
                    alias.name.partition(".")[0]
    return names


def _class_ref(node: ast.expr, names: dict[str, str]) -> str | None:
    """A class named in the source: ``module:Qual``, or None."""
    if isinstance(node, ast.Name):
        found = names.get(node.id)
        return found if found and ":" in found else None
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        module = names.get(node.value.id)
        return f"{module}:{node.attr}" if module and ":" not in module else None
    return None


def _base(node: ast.expr, names: dict[str, str]) -> str | None:
    """A base class's table name; None for a base that compares nothing of its own (``object``, ``Generic[T]``)."""
    if isinstance(node, ast.Subscript):
        node = node.value
    text = ast.unparse(node)
    if text in NEUTRAL:
        return None
    found = _class_ref(node, names)
    if found is None:
        return "?"
    module, _, qual = found.partition(":")
    return None if module in ("typing", "typing_extensions", "abc", "builtins") and qual in NEUTRAL else found


def _read_class(node: ast.ClassDef, names: dict[str, str]) -> dict[str, Any]:
    bases = [b for b in (_base(x, names) for x in node.bases) if b is not None]
    # A metaclass, class keywords or an __init_subclass__ may write methods into this class or its subclasses:
    # the evaluator follows no rule of a class with one of these anywhere among its bases.
    open_ = bool(node.keywords) or any(isinstance(n, ast.FunctionDef) and n.name == "__init_subclass__"
                                       for n in node.body)
    helpers = {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}
    methods: dict[str, Any] = {}
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name in METHODS:
            methods[METHODS[stmt.name]] = _read_method(stmt, METHODS[stmt.name], helpers, names)
        elif isinstance(stmt, ast.Assign | ast.AnnAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id in METHODS:
                    value = stmt.value
                    same = isinstance(value, ast.Name) and value.id in METHODS and METHODS[value.id] in methods
                    methods[METHODS[target.id]] = methods[METHODS[value.id]] if same else UNKNOWN  # type: ignore[union-attr]
    total = None
    decorators = [ast.unparse(d).rpartition(".")[2] for d in node.decorator_list]
    if decorators == ["total_ordering"]:
        total = next((op for op in ("lt", "le", "gt", "ge") if op in methods), None)
    elif decorators:
        # a plain @dataclass writes what dataclass_rules reads; another decorator (attrs, a dataclass with bases)
        # may write comparisons, over the body's own too
        made = dataclass_rules.methods(node, bases, methods)
        methods = made if made is not None else dict.fromkeys(METHODS.values(), UNKNOWN)
    return {"bases": bases, "total": total, "methods": methods, "open": open_}


def _read_method(fn: ast.FunctionDef, op: str, helpers: dict[str, ast.FunctionDef],
                 names: dict[str, str]) -> list[Any]:
    args = fn.args
    if (fn.decorator_list or args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults
            or len(args.args) != 2):
        return UNKNOWN
    me, other = args.args[0].arg, args.args[1].arg
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    if len(body) == 1 and isinstance(body[0], ast.Raise):
        message = _type_error(body[0])
        return ["raise", message] if message is not None else UNKNOWN
    guard = None
    if len(body) >= 2 and isinstance(body[0], ast.If):
        guard = _guard(body[0], me, other, names)
        if guard is None:
            return UNKNOWN
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return ["guarded", guard] if guard is not None else UNKNOWN
    value = body[0].value
    if op == "ne" and guard is None and _negated_eq(value, me, other):
        return ["not", "eq"]
    if guard is None and isinstance(value, ast.BoolOp) and isinstance(value.op, ast.And) and len(value.values) == 2:
        classes = _isinstance(value.values[0], me, other, names)
        if classes is None:
            return UNKNOWN
        guard, value = ["isinstance", classes, False], value.values[1]
    if not (isinstance(value, ast.Compare) and len(value.ops) == 1 and type(value.ops[0]) in OPERATORS):
        return UNKNOWN
    left = _key(value.left, me, helpers, 0)
    right = _key(value.comparators[0], other, helpers, 0)
    if left is None or left != right or not _reads(left, False):
        return ["guarded", guard] if guard is not None else UNKNOWN
    return ["key", OPERATORS[type(value.ops[0])], guard, left]


def _reads(key: list[Any], under: bool) -> bool:
    """Whether a key reads its object's state, and nowhere is the object itself (``(self,) == (other,)``
    would ask the same comparison again)."""
    if key[0] == "self":
        return under
    if key[0] in ("attr", "items"):
        return _reads(key[1], True)
    return len(key) > 1 and all(_reads(k, under) for k in key[1:])


def _type_error(node: ast.Raise) -> str | None:
    exc = node.exc
    if isinstance(exc, ast.Name) and exc.id == "TypeError":
        return ""
    if isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name) and exc.func.id == "TypeError" \
            and not exc.keywords and len(exc.args) <= 1:
        if not exc.args:
            return ""
        arg = exc.args[0]
        return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None
    return None


def _negated_eq(node: ast.expr, me: str, other: str) -> bool:
    if not (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        return False
    inner = node.operand
    if isinstance(inner, ast.Compare) and len(inner.ops) == 1 and isinstance(inner.ops[0], ast.Eq):
        return _is(inner.left, me) and _is(inner.comparators[0], other)
    return (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "__eq__"
            and _is(inner.func.value, me) and len(inner.args) == 1 and _is(inner.args[0], other)
            and not inner.keywords)


def _is(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _guard(node: ast.If, me: str, other: str, names: dict[str, str]) -> list[Any] | None:
    """``if <other is not one of ours>: return <constant>`` -> the guard, else None."""
    if node.orelse or len(node.body) != 1 or not isinstance(node.body[0], ast.Return):
        return None
    answer = _constant(node.body[0].value)
    if answer is None:
        return None
    test = node.test
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        classes = _isinstance(test.operand, me, other, names)
        return ["isinstance", classes, answer[0]] if classes is not None else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot | ast.NotEq):
        sides = {_class_of(test.left, me, other), _class_of(test.comparators[0], me, other)}
        return ["sametype", answer[0]] if sides == {me, other} else None
    return None


def _constant(node: ast.expr | None) -> tuple[Any] | None:
    if isinstance(node, ast.Name) and node.id == "NotImplemented":
        return ("NotImplemented",)
    if isinstance(node, ast.Constant) and type(node.value) is bool:
        return (node.value,)
    return None


def _class_of(node: ast.expr, me: str, other: str) -> str | None:
    """``type(x)`` or ``x.__class__`` for the method's two arguments: which one."""
    if isinstance(node, ast.Call) and _is(node.func, "type") and len(node.args) == 1 and not node.keywords:
        node = node.args[0]
        return node.id if isinstance(node, ast.Name) and node.id in (me, other) else None
    if isinstance(node, ast.Attribute) and node.attr == "__class__" and isinstance(node.value, ast.Name):
        return node.value.id if node.value.id in (me, other) else None
    return None


def _isinstance(node: ast.expr, me: str, other: str, names: dict[str, str]) -> list[str] | None:
    """``isinstance(other, C)`` (or a tuple of classes, or ``type(self)``) -> the classes' table names."""
    if not (isinstance(node, ast.Call) and _is(node.func, "isinstance") and len(node.args) == 2
            and not node.keywords and _is(node.args[0], other)):
        return None
    spec = node.args[1]
    parts = spec.elts if isinstance(spec, ast.Tuple) else [spec]
    out = []
    for part in parts:
        ref = "@self" if _class_of(part, me, other) == me else _class_ref(part, names)
        if ref is None:
            return None
        out.append(ref)
    return out


def _key(node: ast.expr, var: str, helpers: dict[str, ast.FunctionDef], depth: int) -> list[Any] | None:
    """The key expression over the argument ``var``, or None where it is not one."""
    if _is(node, var):
        return ["self"]
    if isinstance(node, ast.Attribute):
        if _is(node.value, var) and node.attr in helpers and depth < MAX_INLINE:
            return _inline(helpers[node.attr], var, helpers, depth, property_=True)
        inner = _key(node.value, var, helpers, depth)
        return ["attr", inner, node.attr] if inner is not None else None
    if isinstance(node, ast.Call) and not node.keywords:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("tuple", "list") and len(node.args) == 1:
            inner = _key(node.args[0], var, helpers, depth)
            return ["items", inner, func.id] if inner is not None else None
        if isinstance(func, ast.Attribute) and _is(func.value, var) and not node.args and func.attr in helpers \
                and depth < MAX_INLINE:
            return _inline(helpers[func.attr], var, helpers, depth, property_=False)
        return None
    if isinstance(node, ast.Tuple | ast.List):
        parts = [_key(e, var, helpers, depth) for e in node.elts]
        if any(p is None for p in parts) or any(isinstance(e, ast.Starred) for e in node.elts):
            return None
        return ["tuple" if isinstance(node, ast.Tuple) else "list", *parts]
    return None


def _inline(fn: ast.FunctionDef, var: str, helpers: dict[str, ast.FunctionDef], depth: int,
            property_: bool) -> list[Any] | None:
    """A helper's ``return K(self)``, as a key over ``var`` (a property when read as an attribute)."""
    decorators = [ast.unparse(d) for d in fn.decorator_list]
    if decorators != (["property"] if property_ else []):
        return None
    args = fn.args
    if len(args.args) != 1 or args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        return None
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return None
    renamed = _Rename(args.args[0].arg, var).visit(body[0].value)
    return _key(renamed, var, helpers, depth + 1)


class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(self.new, node.ctx) if node.id == self.old else node


def table(files: dict[str, bytes], roots: list[str], read: Callable[..., dict[str, Any]] | None = None
          ) -> dict[str, Any]:
    """The rows of every class in ``files`` (production paths -> source) under the import ``roots`` (each file
    read by ``read``, ``read_module``'s signature: ``comparison_cache.read_module`` keeps them)."""
    read = read or read_module
    ordered = sorted(roots, key=len, reverse=True)
    out: dict[str, Any] = {}
    for path, source in sorted(files.items()):
        root = next((r for r in ordered if not r or path.startswith(r + "/")), None)
        module = module_name(path, root) if root is not None else None
        if module is not None and len(source) <= MAX_SOURCE and mentions(source):
            rows = read(module, source, path.endswith("/__init__.py") or path == "__init__.py")
            # a class with no rule and no base the table could hold adds nothing to "no rule"
            out.update((n, r) for n, r in rows.items() if r["methods"] or r["open"] or r["total"]
                       or any(b != "?" for b in r["bases"]))
    return out
