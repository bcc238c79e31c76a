"""A stand-in for a production object, made from the subject's description of it (``describe`` in server.py).

A module is a ``RemoteModule``, a class or exception class a ``RemoteType`` (its production bases where this
process can order them), anything else a ``Remote`` handle (a tuple subclass with its items, an iterator with
a read-ahead buffer).  Nothing here asks production anything.
"""

from __future__ import annotations

import sys
from typing import Any

from mergegate.runner.trusted import ahead, frozen, hierarchy
from mergegate.runner.trusted.link import Link
from mergegate.runner.trusted.proxies import Remote, RemoteModule, RemoteType, remote_id


def make_proxy(ch: Link, number: int, desc: list[Any]) -> Any:
    kind = desc[0] if desc and type(desc[0]) is str else "object"
    if kind == "module" and len(desc) == 2 and type(desc[1]) is str:
        existing = sys.modules.get(desc[1])
        if type(existing) is RemoteModule and remote_id(existing) == (ch, number):
            return existing
        module = RemoteModule(desc[1])
        object.__setattr__(module, "_gate_ref", (ch, number))
        return module
    if kind in ("class", "exception") and len(desc) >= 3 and all(type(d) is str for d in desc[1:3]):
        bases: tuple[type, ...] = (object,)
        if kind == "exception" and len(desc) >= 4 and type(desc[3]) is list:
            bases = hierarchy.exception_bases(desc[3])
        elif len(desc) >= 4 and type(desc[3]) is list and "tuple" in desc[3]:
            bases = (tuple,)  # a production tuple subclass: ``isinstance(header, tuple)`` holds (``frozen.py``)
        name = desc[1].rpartition(".")[2] or "Production"
        if len(desc) >= 5 and type(desc[4]) is str and desc[4].isidentifier():
            name = desc[4]  # its __name__, when production set one (a class made at run time)
        namespace = {"__qualname__": desc[1], "__module__": desc[2], "_gate_ref": (ch, number), "remote_type": desc[1],
                     "_gate_structural": len(desc) >= 4 and type(desc[3]) is list and "structural" in desc[3]}
        own = None
        if kind == "exception" and len(desc) == 5 and type(desc[4]) is list:
            own = hierarchy.production_bases(ch, desc[4])
        try:
            cls = RemoteType(name, own or bases, dict(namespace))
        except TypeError:  # no consistent order of the production bases here: the builtin ones only
            cls = RemoteType(name, bases, namespace)
        if kind == "class" and len(desc) >= 4 and type(desc[3]) is list:
            hierarchy.register(cls, desc[3])
        declared = _slots(desc[5]) if kind == "class" and len(desc) == 6 else None
        if declared is not None:  # set after the class is made: a plain attribute here, no slot descriptors
            type.__setattr__(cls, "__slots__", declared)
        return cls
    proxy = object.__new__(Remote)
    object.__setattr__(proxy, "_gate_ref", (ch, number))
    object.__setattr__(proxy, "_gate_frozen", frozen.make(ch, desc) if kind == "tuple" else None)
    object.__setattr__(proxy, "_gate_hashed", None)  # (snapshot, hash) of its last hash (``Remote.__hash__``)
    object.__setattr__(proxy, "_gate_type", desc[1] if len(desc) > 1 and type(desc[1]) is str else "?")
    object.__setattr__(proxy, "_gate_ahead", ahead.Reader() if desc[2:] == ["iterator"] and kind == "object" else None)
    return proxy


def _slots(data: Any) -> Any:
    """A production class's own ``__slots__`` (``cls.__dict__['__slots__']``): its names, as declared."""
    if type(data) is not list or len(data) != 2 or type(data[1]) is not list \
            or not all(type(n) is str for n in data[1]):
        return None
    if data[0] == "str":
        return data[1][0] if len(data[1]) == 1 else None
    return tuple(data[1]) if data[0] == "tuple" else list(data[1]) if data[0] == "list" else None
