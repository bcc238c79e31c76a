"""pickle and copy of production objects, in the subject; the evaluator never unpickles production's bytes.

``pickle.dumps(handle)`` pickles the object in the subject (its ``__reduce__`` runs there)
and embeds those bytes, as bytes, in the evaluator's pickle: ``restore(data)`` asks the
subject to unpickle them and returns a handle to the result.  ``copy.copy``/``deepcopy``
of a handle copy in the subject (``Remote.__copy__``).

In a sealed run ``pickle.loads``, ``pickle.load`` and ``pickle.Unpickler`` are the
evaluator's restricted unpickler (``guard``): a pickle may name ``restore``, plain builtin
and standard-library value types, production classes (stand-ins, whose calls run in the
subject) and the trusted oracle's own classes; any other global (``os.system``,
``builtins.eval``, ``subprocess.Popen``) is refused, so bytes production chose can never
run code here.
"""

from __future__ import annotations

import io
import pickle
import sys
from typing import Any

from mergegate.runner.trusted.link import Link

_active: list[Link] = []  # the sealed run's channel (``guard``)
_trusted: list[str] = []  # the trusted tree's root: its modules' classes may be named
_SAFE_BUILTINS = frozenset({"set", "frozenset", "list", "dict", "tuple", "bytearray", "bytes", "complex", "int",
                            "float", "str", "bool", "slice", "range", "object"})
_SAFE_MODULES = frozenset({"collections", "datetime", "decimal", "fractions", "uuid", "enum", "zoneinfo",
                           "copyreg", "_codecs", "codecs"})
_SAFE_FUNCTIONS = {("copyreg", "_reconstructor"), ("_codecs", "encode"), ("codecs", "encode"),
                   ("copyreg", "__newobj__"), ("copyreg", "__newobj_ex__")}
_REAL = (pickle.loads, pickle.load, pickle.Unpickler)


class ProductionPickle(bytes):
    """Bytes a production object was pickled to, in the subject: restored only by the subject."""


def reduce(ch: Link, handle: Any, protocol: Any) -> Any:
    data = ch.request("pickle", ch.enc(handle), protocol if type(protocol) is int else None)
    if type(data) is not bytes:
        raise pickle.PicklingError("the subject did not answer a pickle request with bytes")
    return (restore, (bytes(data),))


def restore(data: bytes) -> Any:
    """Unpickle production's bytes in the subject; a handle (or plain value) comes back."""
    if not _active:
        raise pickle.UnpicklingError("a pickled production object can only be restored in a sealed run")
    ch = _active[0]
    if type(data) is not bytes:
        raise pickle.UnpicklingError("malformed production pickle")
    return ch.request("unpickle", ch.enc(data))


class Unpickler(pickle.Unpickler):
    """The evaluator's unpickler: only the globals the module docstring names."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == (__name__, "restore"):
            return restore
        top = module.partition(".")[0]
        if module == "builtins" and name in _SAFE_BUILTINS:
            return getattr(__import__("builtins"), name)
        loaded = sys.modules.get(module)
        if loaded is not None and (top in _SAFE_MODULES or _is_trusted(loaded) or _is_production(loaded)):
            obj = super().find_class(module, name)
            if isinstance(obj, type) or (module, name) in _SAFE_FUNCTIONS or _is_production(loaded):
                return obj
        raise pickle.UnpicklingError(
            f"a pickle naming {module}.{name} is not unpickled in the evaluator (bytes production chose could run "
            "code here); pickle production objects themselves (pickle.dumps(obj)), or mark the entry isolation: shared")


def _is_trusted(module: Any) -> bool:
    file = getattr(module, "__file__", None)
    return type(file) is str and any(file.startswith(root.rstrip("/") + "/") for root in _trusted)


def _is_production(module: Any) -> bool:
    return type(module).__name__ == "RemoteModule" and getattr(module, "_gate_ref", None) is not None


def loads(data: Any, /, *, fix_imports: bool = True, encoding: str = "ASCII", errors: str = "strict",
          buffers: Any = None) -> Any:
    return Unpickler(io.BytesIO(bytes(data)), fix_imports=fix_imports, encoding=encoding, errors=errors,
                     buffers=buffers).load()


def load(file: Any, *, fix_imports: bool = True, encoding: str = "ASCII", errors: str = "strict",
         buffers: Any = None) -> Any:
    return Unpickler(file, fix_imports=fix_imports, encoding=encoding, errors=errors, buffers=buffers).load()


def guard(ch: Link, trusted_root: str) -> None:
    """In a sealed run: restore through ``ch``; the evaluator's pickle module unpickles restrictedly."""
    _active[:] = [ch]
    _trusted[:] = [trusted_root]
    pickle.loads, pickle.load, pickle.Unpickler = loads, load, Unpickler  # type: ignore[misc]
