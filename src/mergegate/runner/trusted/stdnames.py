"""A standard-library module, class or function, or a TypeVar, named rather than sent.

What the subject looks up is its own standard library's object of that name; nothing of the
evaluator's object crosses.
"""

from __future__ import annotations

import types
from typing import Any


def standard(obj: Any) -> list[Any] | None:
    """``["std", module, qualname]`` for a standard-library module, class or function, ``["tv", name]`` for a
    TypeVar, else None.  Only names that resolve back to ``obj`` here are sent."""
    import sys
    import typing

    if isinstance(obj, typing.TypeVar):
        return ["tv", obj.__name__]
    if isinstance(obj, types.ModuleType):
        name = getattr(obj, "__name__", "")
        return ["std", name, ""] if type(name) is str and name.partition(".")[0] in sys.stdlib_module_names \
            and sys.modules.get(name) is obj else None
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if type(module) is not str or type(qualname) is not str or module.partition(".")[0] not in sys.stdlib_module_names:
        return None
    found: Any = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return ["std", module, qualname] if found is obj else None
