"""Where a production class's stand-in sits among this process's classes: exception bases, collections ABCs."""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import Any

from mergegate.runner.trusted.faults import ProductionError
from mergegate.runner.trusted.link import Link

BUILTIN_EXCEPTIONS = {name: cls for name, cls in vars(builtins).items()
                      if isinstance(cls, type) and issubclass(cls, Exception)
                      and not issubclass(cls, BaseExceptionGroup)}
# End an iteration the property drives (a map(), a for loop): only ever the answer to ``next``.
ITERATION_ENDS = frozenset({"StopIteration", "StopAsyncIteration"})


def register(cls: type, names: list[Any]) -> None:
    """The collections ABCs the production class says it implements (``issubclass(cls, Mapping)``).

    Production's claim about its own interface, as ``__iter__`` is: it changes what the oracle
    does with the class (its own checks), never what a comparison concludes.
    """
    import collections.abc

    for name in names:
        abc = getattr(collections.abc, name, None) if type(name) is str and name in collections.abc.__all__ else None
        if isinstance(abc, type):
            abc.register(cls)  # type: ignore[attr-defined]


def production_bases(ch: Link, direct: list[Any]) -> tuple[type, ...] | None:
    """The stand-ins of an exception class's own bases, so ``except ProductionBase`` matches as it does there
    (Python matches ``except`` by the real class hierarchy, never asking ``__subclasscheck__``)."""
    bases: list[type] = []
    for base in direct:
        if type(base) is str:
            cls = BUILTIN_EXCEPTIONS.get(base) if base not in ITERATION_ENDS else None
            if cls is None:
                return None
            bases.append(cls)
        else:
            cls = ch.dec(base)
            if not issubclass(type(cls), type) or not issubclass(cls, ProductionError):
                return None
            bases.append(cls)
    if not any(issubclass(b, ProductionError) for b in bases):
        bases.append(ProductionError)
    return tuple(bases)


def exception_bases(names: Iterable[Any]) -> tuple[type, ...]:
    """(the nearest builtin exception, ProductionError): ``except ValueError`` still matches."""
    for name in names:
        cls = BUILTIN_EXCEPTIONS.get(name) if type(name) is str and name not in ITERATION_ENDS else None
        if cls is not None and cls is not Exception:
            try:
                type("probe", (cls, ProductionError), {})
            except TypeError:
                continue
            return (cls, ProductionError)
    return (ProductionError,)
