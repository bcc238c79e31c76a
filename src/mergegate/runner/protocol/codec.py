"""The sealed call protocol's value codec: plain data as tagged JSON, everything else a reference.

Standard library only: the subject loads this file by path inside its sandbox,
the trusted evaluator imports it.  Both sides encode and decode with it.

A value on the wire is JSON.  ``null``, booleans, small integers, floats and
strings stand for themselves; every other value is an array whose first element
is a tag (see ``_DECODERS``): tuples, lists, dicts (the standard library's ``OrderedDict``,
``defaultdict`` and ``Counter`` as themselves: ``mappings.py``), sets, bytes, big integers,
``Decimal``, ``Fraction``, dates and times, ``UUID``, ``pathlib`` paths, compiled regular
expressions (compiled again by the decoder's own ``re``), named tuples (rebuilt
as the decoder's own ``namedtuple``), builtin types by name, and references to
objects that stay on the side that owns them.

Decoding never runs code the peer chose: each tag builds one of this side's own
builtin or standard-library types from JSON scalars, so an ``int`` subclass whose
``__eq__`` always holds arrives as a plain ``int``.  Nothing is unpickled or
evaluated.  Sizes and depth are bounded; anything malformed is a ``CodecError``.
"""

from __future__ import annotations

import collections
import datetime as dt
import decimal
import fractions
import keyword
import uuid
from collections.abc import Callable, Sequence
from typing import Any, cast

from . import identity, mappings, textual

MAX_DEPTH = 100
MAX_INT_HEX = 1 << 16  # hex digits of one integer (about 78,000 decimal digits)
SMALL_INT = 1 << 53  # JSON numbers beyond this lose precision in many readers: tag them

BUILTIN_TYPES = {t.__name__: t for t in (
    int, float, complex, bool, str, bytes, bytearray, list, tuple, dict, set, frozenset, object, type,
    range, slice, memoryview, property, staticmethod, classmethod, super, enumerate, zip, map, filter,
    reversed, type(None), type(...), type(NotImplemented),
)}


class CodecError(Exception):
    """A value that cannot be carried, or a message that is not well-formed."""


# ---------------------------------------------------------------- encoding

Other = Callable[[Any], list[Any]]  # an object that is not plain data -> its reference array


SAME = identity.Identity(0)  # this process's table of named values (``identity.py``); its connection's owner sets it


# Kinds whose every value is encoded by ``other`` (not plain data, not a class): found by ``encode`` once per kind,
# then sent there at once.  Which branch a value takes depends on its type alone (exact type, then its bases), and
# none of these is ever named (``identity`` names immutable plain values only).  A stand-in for a production object
# is most arguments of most requests.
BY_REFERENCE: set[type] = set()


def encode(value: Any, other: Other, depth: int = 0) -> Any:
    """``value`` as a JSON-ready structure; ``other`` encodes what is not plain data."""
    if type(value) in BY_REFERENCE:
        return other(value)
    if SAME.names:
        name = SAME.names.get(id(value))
        if name is not None:
            return ["~", name]
    kind = type(value)
    if value is None or kind is bool or kind is str or kind is float:
        return value
    if kind is int:
        return value if -SMALL_INT < value < SMALL_INT else ["I", format(value, "x")]
    if depth > MAX_DEPTH:
        raise CodecError(f"value nested deeper than {MAX_DEPTH} levels (or recursive)")
    enc = _ENCODERS.get(kind)
    if enc is not None:
        return enc(value, other, depth + 1)
    if issubclass(kind, _PLAIN_BASES):  # the real type: a spoofed __class__ does not count
        for base, enc in _SUBCLASS_ENCODERS:
            if issubclass(kind, base):
                return enc(value, other, depth + 1)
    named = builtin_type(value)
    if named is not None:
        return named
    if not issubclass(kind, type):  # a class's values may be builtin types: asked each time
        BY_REFERENCE.add(kind)
    return other(value)


def encode_call(args: Sequence[Any], kwargs: dict[str, Any] | None, other: Other) -> tuple[list[Any], list[Any]]:
    """A request's arguments (and keyword arguments): each top-level immutable plain value the peer has not seen
    goes named (``["=", name, value]``, ``identity.py``), so it can come back as itself.  All or nothing: a value
    that cannot be encoded takes back the names given before it."""
    given: list[int] = []
    same, out = SAME, [cast(Any, "l")]  # literals: a called ``list[Any]`` costs 2 us
    kw: list[Any] = ["d"]
    try:
        pairs = [(out, None, v) for v in args] + [(kw, k, v) for k, v in (kwargs or {}).items()]
        for into, key, value in pairs:
            if key is not None:
                into.append(key)
            if type(value) in BY_REFERENCE:  # a reference, never named
                into.append(other(value))
                continue
            known = same.names.get(id(value))
            if known is not None:
                into.append(["~", known])
                continue
            data = encode(value, other)
            name = same.add(value)
            if name is None:
                into.append(data)
            else:
                given.append(name)
                into.append(["=", name, data])
        return out, kw
    except BaseException:
        same.forget(given)
        raise


def _named(data: list[Any], resolve: Resolve, depth: int) -> Any:
    if len(data) != 3:
        raise CodecError("malformed named value")
    value = decode(data[2], resolve, depth)
    if type(value) is float:  # a fresh object: ``json`` decodes every NaN and infinity as one shared constant
        value = value * 1.0
    SAME.learn(data[1], value)
    return value


def _items(values: Any, other: Other, depth: int) -> list[Any]:
    return [encode(v, other, depth) for v in values]


def _dict(value: dict[Any, Any], other: Other, depth: int) -> list[Any]:
    out: list[Any] = ["d"]
    for key, item in dict.items(value):
        out.append(encode(key, other, depth))
        out.append(encode(item, other, depth))
    return out


def _tuple(value: tuple[Any, ...], other: Other, depth: int) -> list[Any]:
    if type(value) is tuple:
        return ["t", *_items(tuple.__iter__(value), other, depth)]
    fields: Any = getattr(type(value), "_fields", None)
    if not _is_fields(fields) or type.__getattribute__(type(value), "__bases__") != (tuple,):
        # a tuple subclass of its own (``class HeaderTuple(tuple)``, a named tuple's subclass with its
        # methods): the object stays where it is, so its type, attributes and methods stay its own
        return other(value)
    items = _items(tuple.__iter__(value), other, depth)
    if len(fields) == len(items):
        return ["nt", str(type(value).__name__), list(fields), *items]
    return ["t", *items]


def _is_fields(fields: Any) -> bool:
    return type(fields) is tuple and all(type(f) is str for f in fields)


def _datetime(value: dt.datetime, other: Other, depth: int) -> list[Any]:
    zone = value.tzinfo
    if zone is not None and type(zone) is not dt.timezone:
        # a zone with rules (zoneinfo, dateutil): the wall time by value, the zone by reference
        wall = dt.datetime.isoformat(dt.datetime.replace(value, tzinfo=None))
        return ["dtz", wall, 1 if value.fold else 0, other(zone)]
    return ["dt", dt.datetime.isoformat(value)]


def _time(value: dt.time, other: Other, depth: int) -> list[Any]:
    if value.tzinfo is not None and type(value.tzinfo) is not dt.timezone:
        return other(value)
    return ["tm", dt.time.isoformat(value)]


_ENCODERS: dict[type, Callable[[Any, Other, int], Any]] = {
    tuple: _tuple,
    list: lambda v, o, d: ["l", *_items(list.__iter__(v), o, d)],
    dict: _dict,
    set: lambda v, o, d: ["s", *_items(set.__iter__(v), o, d)],
    frozenset: lambda v, o, d: ["fs", *_items(frozenset.__iter__(v), o, d)],
    bytes: lambda v, o, d: ["b", bytes.decode(v, "latin-1")],
    bytearray: lambda v, o, d: ["ba", bytes(v).decode("latin-1")],
    complex: lambda v, o, d: ["c", complex.__getattribute__(v, "real"), complex.__getattribute__(v, "imag")],
    decimal.Decimal: lambda v, o, d: ["D", decimal.Decimal.__str__(v)],
    fractions.Fraction: lambda v, o, d: ["F", encode(v.numerator, o, d), encode(v.denominator, o, d)],
    dt.datetime: _datetime,
    dt.date: lambda v, o, d: ["da", dt.date.isoformat(v)],
    dt.time: _time,
    dt.timedelta: lambda v, o, d: ["td", v.days, v.seconds, v.microseconds],
    uuid.UUID: lambda v, o, d: ["u", v.hex],
    range: lambda v, o, d: ["r", encode(v.start, o, d), encode(v.stop, o, d), encode(v.step, o, d)],
    slice: lambda v, o, d: ["sl", encode(v.start, o, d), encode(v.stop, o, d), encode(v.step, o, d)],
    type(...): lambda v, o, d: ["..."],
}
_ENCODERS.update(textual.encoders(encode))  # a compiled pattern, pathlib's own paths
EXACT = frozenset(textual.encoders(encode))  # plain data only as exactly these types (a subclass stays a handle)

_FRACTION: dict[str, Any] = dict(vars(fractions.Fraction))
_UUID: dict[str, Any] = dict(vars(uuid.UUID))

# Subclasses of plain types travel as their base type's value, read with the base type's own
# methods and descriptors (never the subclass's): what arrives is plain data.  Tuples are the
# exception (``_tuple``): a subclass of its own stays a reference, and a comparison with it is
# decided over its items (``snapshot.py``).  datetime before date: it is a subclass of it.
_SUBCLASS_ENCODERS: list[tuple[type, Callable[[Any, Other, int], Any]]] = [
    (int, lambda v, o, d: encode(int.__int__(v), o, d)),
    (float, lambda v, o, d: float.__float__(v)),
    (str, lambda v, o, d: str.__str__(v)),
    (bytes, lambda v, o, d: ["b", bytes.decode(v, "latin-1")]),
    (bytearray, lambda v, o, d: ["ba", bytes(bytearray.__iter__(v)).decode("latin-1")]),
    (tuple, _tuple),
    (list, lambda v, o, d: ["l", *_items(list.__iter__(v), o, d)]),
    (dict, _dict),
    (frozenset, lambda v, o, d: ["fs", *_items(frozenset.__iter__(v), o, d)]),
    (set, lambda v, o, d: ["s", *_items(set.__iter__(v), o, d)]),
    (complex, lambda v, o, d: ["c", complex.real.__get__(v), complex.imag.__get__(v)]),
    (decimal.Decimal, lambda v, o, d: ["D", decimal.Decimal.__str__(v)]),
    (fractions.Fraction, lambda v, o, d: ["F", encode(int.__int__(_FRACTION["numerator"].fget(v)), o, d),
                                          encode(int.__int__(_FRACTION["denominator"].fget(v)), o, d)]),
    (dt.datetime, lambda v, o, d: _datetime(dt.datetime.replace(v), o, d)),
    (dt.date, lambda v, o, d: ["da", dt.date.isoformat(v)]),
    (dt.time, lambda v, o, d: _time(dt.time.replace(v), o, d)),
    (dt.timedelta, lambda v, o, d: ["td", dt.timedelta.days.__get__(v), dt.timedelta.seconds.__get__(v),
                                    dt.timedelta.microseconds.__get__(v)]),
    (uuid.UUID, lambda v, o, d: ["u", format(int.__int__(_UUID["int"].__get__(v)), "032x")]),
]


_PLAIN_BASES = tuple(base for base, _enc in _SUBCLASS_ENCODERS)


def builtin_type(value: Any) -> list[Any] | None:
    """``["B", name]`` when ``value`` is one of the builtin types both sides share by name."""
    name = getattr(value, "__name__", "") if issubclass(type(value), type) else ""  # type(): never __class__
    if name and BUILTIN_TYPES.get(name) is value:
        return ["B", name]
    return None


# ---------------------------------------------------------------- decoding

Resolve = Callable[[list[Any]], Any]  # a reference array -> the local stand-in for it

_named_tuples: dict[tuple[str, tuple[str, ...]], type] = {}


def decode(data: Any, resolve: Resolve, depth: int = 0) -> Any:
    """The value ``data`` stands for, built from this side's own types."""
    kind = type(data)
    if data is None or kind is bool or kind is str or kind is float or kind is int:
        return data
    if kind is not list or not data or type(data[0]) is not str:
        raise CodecError(f"malformed value of type {kind.__name__}")
    if depth > MAX_DEPTH:
        raise CodecError(f"value nested deeper than {MAX_DEPTH} levels")
    dec = _DECODERS.get(data[0])
    if dec is None:
        return resolve(data)
    try:
        return dec(data, resolve, depth + 1)
    except CodecError:
        raise
    except (TypeError, ValueError, ArithmeticError, IndexError, KeyError, OverflowError) as exc:
        raise CodecError(f"malformed {data[0]!r} value: {type(exc).__name__}: {exc}") from None


def _each(data: list[Any], resolve: Resolve, depth: int, start: int = 1) -> list[Any]:
    return [decode(v, resolve, depth) for v in data[start:]]


def _text(value: Any) -> str:
    if type(value) is not str:
        raise CodecError("malformed value: expected a string")
    return value


def _dec_dict(data: list[Any], resolve: Resolve, depth: int) -> dict[Any, Any]:
    if len(data) == 1:  # a call's keyword arguments, most often: none
        return {}
    items = _each(data, resolve, depth)
    if len(items) % 2:
        raise CodecError("malformed dict: odd number of items")
    made = dict(zip(items[::2], items[1::2], strict=True))
    if 2 * len(made) < len(items):  # keys merged here (the check only then: every dict comes this way)
        mappings.kept_apart(made, items[::2], CodecError)
    return made


def _dec_int(data: list[Any], resolve: Resolve, depth: int) -> int:
    text = _text(data[1])
    if len(text) > MAX_INT_HEX:
        raise CodecError(f"integer longer than {MAX_INT_HEX} hex digits")
    return int(text, 16)


def _dec_named(data: list[Any], resolve: Resolve, depth: int) -> tuple[Any, ...]:
    name, fields = _text(data[1]), data[2]
    if (type(fields) is not list or not all(type(f) is str and f.isidentifier() and not keyword.iskeyword(f)
                                            and not f.startswith("_") for f in fields)
            or len(set(fields)) != len(fields) or not name.isidentifier() or keyword.iskeyword(name)):
        return tuple(_each(data, resolve, depth, 3))
    key = (name, tuple(fields))
    cls = _named_tuples.get(key)
    if cls is None:
        cls = _named_tuples.setdefault(key, collections.namedtuple(name, fields))
    items = _each(data, resolve, depth, 3)
    if len(items) != len(fields):
        raise CodecError("malformed named tuple: wrong number of items")
    return cls(*items)  # type: ignore[no-any-return]


def _dec_zoned(data: list[Any], resolve: Resolve, depth: int) -> dt.datetime:
    """A wall time and a zone reference: the zone is what ``resolve(["tz", reference])`` makes of it."""
    if len(data) != 4 or data[2] not in (0, 1) or type(data[3]) is not list:
        raise CodecError("malformed zoned datetime")
    wall = dt.datetime.fromisoformat(_text(data[1]))
    zone = resolve(["tz", data[3]])
    if wall.tzinfo is not None or not isinstance(zone, dt.tzinfo):
        raise CodecError("malformed zoned datetime")
    return dt.datetime.replace(wall, tzinfo=zone, fold=data[2])


def _number(value: Any) -> float:
    if type(value) not in (int, float):
        raise CodecError("malformed value: expected a number")
    return float(value)


def _dec_builtin(data: list[Any], resolve: Resolve, depth: int) -> type:
    cls = BUILTIN_TYPES.get(_text(data[1]))
    if cls is None:
        raise CodecError(f"unknown builtin type {data[1]!r}")
    return cls


def _fraction(data: list[Any], resolve: Resolve, depth: int) -> fractions.Fraction:
    num, den = decode(data[1], resolve, depth), decode(data[2], resolve, depth)
    if type(num) is not int or type(den) is not int:
        raise CodecError("malformed fraction")
    return fractions.Fraction(num, den)


def _ints(data: list[Any], resolve: Resolve, depth: int) -> list[Any]:
    out = _each(data, resolve, depth)
    if not all(v is None or type(v) is int for v in out):
        raise CodecError(f"malformed {data[0]!r}: expected integers")
    return out


_DECODERS: dict[str, Callable[[list[Any], Resolve, int], Any]] = {
    "I": _dec_int,
    "t": lambda d, r, n: tuple(_each(d, r, n)),
    "nt": _dec_named,
    "l": _each,
    "d": _dec_dict,
    "s": lambda d, r, n: (lambda items: mappings.kept_apart(set(items), items, CodecError))(_each(d, r, n)),
    "fs": lambda d, r, n: (lambda items: mappings.kept_apart(frozenset(items), items, CodecError))(_each(d, r, n)),
    "b": lambda d, r, n: _text(d[1]).encode("latin-1"),
    "ba": lambda d, r, n: bytearray(_text(d[1]).encode("latin-1")),
    "c": lambda d, r, n: complex(_number(d[1]), _number(d[2])),
    "D": lambda d, r, n: decimal.Decimal(_text(d[1])),
    "F": _fraction,
    "dt": lambda d, r, n: dt.datetime.fromisoformat(_text(d[1])),
    "dtz": _dec_zoned,
    "da": lambda d, r, n: dt.date.fromisoformat(_text(d[1])),
    "tm": lambda d, r, n: dt.time.fromisoformat(_text(d[1])),
    "td": lambda d, r, n: dt.timedelta(*_ints(d, r, n)),
    "u": lambda d, r, n: uuid.UUID(hex=_text(d[1])),
    "r": lambda d, r, n: range(*_ints(d, r, n)),
    "sl": lambda d, r, n: slice(*_each(d, r, n)),
    "...": lambda d, r, n: ...,
    "B": _dec_builtin,
    "=": _named,
    "~": lambda d, r, n: SAME.get(d[1]) if len(d) == 2 else SAME.get(None),
}
_ENCODERS.update(mappings.encoders(encode))  # OrderedDict, defaultdict, Counter: each arrives as itself
# ... and a subclass of one as that type, not as a dict: an OrderedDict's order is part of its ``==``
_SUBCLASS_ENCODERS[:0] = mappings.encoders(encode).items()
_DECODERS.update(mappings.decoders(decode, CodecError))
_DECODERS.update(textual.decoders(decode, CodecError))

