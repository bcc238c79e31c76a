"""In-process guards for properties marked ``isolation: shared`` (stdlib only, imported before production).

Snapshots of what production code must not change (functions and classes of every
loaded module, Hypothesis's engine constants, the builtins, the tracer) and the
oracle's non-production imports.  A list of guards, not a boundary: see
docs/runner.md for what it cannot stop, and why sealed runs are the default.
Everything ``tampered`` reads is bound at definition time, so rebinding this
module's globals from production code changes nothing.
"""

from __future__ import annotations

import builtins
import os
import sys
import types
from typing import Any

_SNAP_SKIP = frozenset({"sys", "__main__", "builtins"})


Snapshot = dict[str, tuple[Any, dict[str, Any], dict[str, tuple[type, dict[str, Any]]]]]


def snapshot(names: Any) -> Snapshot:
    """Module -> (module, {attr: value}, {class: (class, {member: value})}).

    Functions, classes and modules are kept by identity; a Python class defined
    in the module also contributes its own ``__dict__`` callables, so a patched
    ``Fraction.__eq__`` or ``TestCase.assertEqual`` is seen.
    """
    snap: Snapshot = {}
    for name in list(names):
        mod = sys.modules.get(name)
        if mod is None or name in _SNAP_SKIP:
            continue
        attrs: dict[str, Any] = {}
        members: dict[str, tuple[type, dict[str, Any]]] = {}
        for key, value in list(vars(mod).items()):
            if callable(value) or isinstance(value, types.ModuleType):
                attrs[key] = value
                if isinstance(value, type) and getattr(value, "__module__", None) == name:
                    own = {k: v for k, v in list(vars(value).items())
                           if callable(v) or isinstance(v, (staticmethod, classmethod, property))}
                    if own:
                        members[key] = (value, own)
        snap[name] = (mod, attrs, members)
    return snap


_MISSING = object()
_SCALARS = (int, float, str, bytes, bool, type(None), tuple, frozenset)


def scalars(names: Any) -> dict[str, tuple[Any, dict[str, Any]]]:
    """Hypothesis's module-level constants (limits, buffer sizes, flags), compared by value.

    A production module that lowers an engine limit at import time could make
    generation trivial without replacing a single function.
    """
    snap: dict[str, tuple[Any, dict[str, Any]]] = {}
    for name in list(names):
        mod = sys.modules.get(name)
        if mod is None or not (name == "hypothesis" or name.startswith("hypothesis.")):
            continue
        snap[name] = (mod, {k: v for k, v in list(vars(mod).items())
                            if isinstance(v, _SCALARS) and k.lstrip("_").isupper()})  # constants only
    return snap


def scalars_moved(snap: dict[str, tuple[Any, dict[str, Any]]], missing: object = _MISSING) -> str | None:
    for name, (mod, attrs) in snap.items():
        mdict = mod.__dict__
        for key, value in attrs.items():
            got = mdict.get(key, missing)
            if got is not value and (type(got) is not type(value) or got != value):  # NaN is itself
                return f"{name}.{key}"
    return None


def tampered(
    snap: Snapshot,
    builtins_before: dict[str, Any],
    now: dict[str, Any] = builtins.__dict__,
    modules: dict[str, Any] = sys.modules,
    gettrace: Any = sys.gettrace,
    getprofile: Any = sys.getprofile,
    missing: object = _MISSING,
) -> str | None:
    """The first thing production code changed since ``snap``, or None.

    Everything it reads is bound at definition time (default arguments), so
    rebinding this module's globals from production code changes nothing.
    """
    for key, value in builtins_before.items():
        if now.get(key, missing) is not value:
            return f"builtins.{key}"
    for name, (mod, attrs, members) in snap.items():
        if modules.get(name) is not mod:
            return f"sys.modules[{name!r}]"
        mdict = mod.__dict__
        for key, value in attrs.items():
            if mdict.get(key, missing) is not value:
                return f"{name}.{key}"
        for owner, (cls, own) in members.items():  # the class itself was checked just above
            cdict = cls.__dict__
            for key, value in own.items():
                if cdict.get(key, missing) is not value:
                    return f"{name}.{owner}.{key}"
    if gettrace() is not None or getprofile() is not None:
        return "sys.settrace/setprofile"
    return None


def oracle_imports(source: bytes, prod_roots: list[str]) -> list[str]:
    """Absolute top-level imports of the oracle that are not production modules."""
    from mergegate.records.nodeids import imported_modules

    wanted = []
    for name in imported_modules(source, members=False):
        top = name.split(".")[0]
        if any(os.path.exists(os.path.join(r, top)) or os.path.exists(os.path.join(r, top + ".py"))
               for r in prod_roots):
            continue  # a production module: imported later, as the oracle's code says
        wanted.append(name)
    return wanted
