"""The comparisons ``@dataclass`` writes, as ``comparisons.py``'s rules, read from the class statement.

``@dataclass`` (``eq=True``) gives a class ``__eq__`` over the tuple of its fields, for an
object of the very same class (``other.__class__ is self.__class__``, else ``NotImplemented``);
``order=True`` gives ``__lt__`` and the rest the same way.  A field declared with
``field(compare=False)`` is not compared, and ``ClassVar``/``InitVar``/``KW_ONLY`` are not fields.
A method the body defines itself is kept (``dataclass`` does not replace ``__eq__``).

Read only in the plain case: one decorator, ``dataclass`` or ``dataclasses.dataclass``, called
with constant ``eq``/``order`` (other keywords do not change comparisons), no bases (inherited
fields), and every ``compare=`` a constant.  Anything else leaves the class's methods unknown.
"""

from __future__ import annotations

import ast
from typing import Any

ORDERS = ("lt", "le", "gt", "ge")


def methods(node: ast.ClassDef, bases: list[str], own: dict[str, Any]) -> dict[str, Any] | None:
    """The class's comparison rules with what the decorator writes, or None where it is not the plain case."""
    if len(node.decorator_list) != 1 or bases:
        return None
    deco = node.decorator_list[0]
    call = deco if isinstance(deco, ast.Call) else None
    if ast.unparse(call.func if call else deco) not in ("dataclass", "dataclasses.dataclass") or (call and call.args):
        return None
    flags = {"eq": True, "order": False}
    for keyword in call.keywords if call else []:
        if keyword.arg is None:
            return None
        if keyword.arg in flags:
            if not (isinstance(keyword.value, ast.Constant) and type(keyword.value.value) is bool):
                return None
            flags[keyword.arg] = keyword.value.value
    fields = []
    for stmt in node.body:
        if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
            continue
        annotation = ast.unparse(stmt.annotation)
        if any(word in annotation for word in ("ClassVar", "InitVar", "KW_ONLY")):
            continue
        compared = _compared(stmt.value)
        if compared is None:
            return None
        if compared:
            fields.append(stmt.target.id)
    if not fields:
        return None
    key = ["tuple", *(["attr", ["self"], name] for name in fields)]
    out = dict(own)
    if flags["eq"] and "eq" not in own:
        out["eq"] = ["key", "eq", ["sametype", "NotImplemented"], key]
    if flags["order"]:
        if any(op in own for op in ORDERS):
            return None  # dataclass refuses to make such a class
        out.update((op, ["key", op, ["sametype", "NotImplemented"], key]) for op in ORDERS)
    return out


def _compared(value: ast.expr | None) -> bool | None:
    """Whether the field is compared (``field(compare=False)`` is not); None where that is not a constant."""
    if not (isinstance(value, ast.Call) and ast.unparse(value.func) in ("field", "dataclasses.field")):
        return True
    for keyword in value.keywords:
        if keyword.arg is None:
            return None
        if keyword.arg == "compare":
            constant = keyword.value
            return constant.value if isinstance(constant, ast.Constant) and type(constant.value) is bool else None
    return True
