"""YAML loading that keeps line numbers, so every error names file, line and fix.

PyYAML's ``safe_load`` forgets where a value came from.  We compose the node
graph once, build plain Python data from it with the safe constructor, and keep
a map from key path to line for the schema checks in policy, catalog and ledger.
Every YAML file the gate reads goes through ``load``: aliases are refused, tags
are limited to the plain safe set, size and nesting are capped, and every error
is one line.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from mergegate.errors import ConfigError

_CParser: Any
try:  # the C parser is several times faster where libyaml is present; it lives in yaml.cyaml
    # (``yaml.CParser`` does not exist: cyaml's __all__ leaves it out of the package's names)
    from yaml.cyaml import CParser as _CParser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - depends on the PyYAML build
    _CParser = None

Path = tuple[str | int, ...]

MAX_BYTES = 4 * 1024 * 1024  # no file the gate reads is near this; a bigger one is refused
MAX_DEPTH = 64  # nesting of mappings and sequences
# Explicit tags a file may carry; everything else (!!timestamp, !!binary, !!set, !!python/...) is refused.
SAFE_TAGS = frozenset(f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "seq", "map"))
_FIX = "fix the YAML syntax"


class _ValueError(yaml.constructor.ConstructorError):
    """A scalar the safe constructor could not turn into its value (a bad date, a huge integer)."""


class _Constructor(yaml.constructor.SafeConstructor):
    """The safe constructor, but a value it cannot build is a marked error, never a traceback."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except (ValueError, TypeError, AttributeError, OverflowError, KeyError, RecursionError) as exc:
            value = node.value if isinstance(node, yaml.ScalarNode) else node.tag
            why = _one_line(str(exc))[:100]
            raise _ValueError(None, None, f"cannot read {str(value)[:60]!r} ({why})", node.start_mark) from None


if _CParser is not None:
    class _Loader(_CParser, _Constructor, yaml.resolver.Resolver):  # type: ignore[misc]
        def __init__(self, stream: str | bytes) -> None:
            _CParser.__init__(self, stream)
            _Constructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

else:  # pragma: no cover - depends on the PyYAML build

    class _Loader(  # type: ignore[no-redef]
        yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, yaml.composer.Composer,
        _Constructor, yaml.resolver.Resolver,
    ):
        def __init__(self, stream: str | bytes) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
            yaml.composer.Composer.__init__(self)
            _Constructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)




@dataclass(frozen=True)
class Doc:
    """Parsed YAML plus the line of every key and sequence item."""

    source: str
    data: Any
    lines: dict[Path, int] = field(default_factory=dict)

    def line(self, path: Path) -> int | None:
        """Line of ``path``, or of its nearest ancestor that has one."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), None)

    def error(self, path: Path, message: str, fix: str) -> ConfigError:
        return ConfigError(self.source, self.line(path), message, fix)


def load(text: str | bytes, source: str, max_bytes: int = MAX_BYTES) -> Doc:
    """Parse one YAML document; every problem is a one-line ConfigError with its line.

    Aliases are refused (a 700-byte file must not expand to gigabytes), so are
    tags outside ``SAFE_TAGS``, nesting past ``MAX_DEPTH`` and files over ``max_bytes``.
    """
    if len(text) > max_bytes:
        raise ConfigError(source, None, f"{len(text)} bytes, over the {max_bytes}-byte limit for a YAML file",
                          "keep the file smaller (split it or drop stale entries)")
    try:
        _screen(text, source)
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = ", ".join(_one_line(part) for part in (exc.context, exc.problem) if part) or "unreadable"
        fix = "write a valid value, or quote it to keep it as text" if isinstance(exc, _ValueError) else _FIX
        raise ConfigError(source, mark.line + 1 if mark is not None else None, f"not valid YAML: {what}", fix) from None
    except yaml.reader.ReaderError as exc:
        what = _one_line(str(exc.reason))
        if isinstance(exc.character, int) and "characters" in what:  # the same words from either parser
            what = f"unacceptable character #x{exc.character:04x}: special characters are not allowed"
        raise ConfigError(source, _line_at(text, exc.position), f"not valid YAML: {what}",
                          "save it as UTF-8 text") from None
    except (yaml.YAMLError, RecursionError, MemoryError) as exc:
        raise ConfigError(source, None, f"not valid YAML: {_one_line(str(exc))}", _FIX) from None
    lines: dict[Path, int] = {}
    if node is not None:
        lines[()] = node.start_mark.line + 1
        _walk(node, (), lines, source)
    return Doc(source, data, lines)


def _screen(text: str | bytes, source: str) -> None:
    """One pass over the event stream: refuse aliases, unsafe tags and deep nesting before building."""
    loader = _Loader(text)
    depth = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            if event is None:
                break
            line = event.start_mark.line + 1 if event.start_mark is not None else None
            if isinstance(event, yaml.AliasEvent):
                raise ConfigError(source, line, f"YAML alias *{event.anchor} is not allowed",
                                  "write the value out in full (anchors and aliases are refused)")
            tag = getattr(event, "tag", None)
            if tag not in (None, "!") and tag not in SAFE_TAGS:
                raise ConfigError(source, line, f"YAML tag {_one_line(str(tag))[:80]!r} is not allowed",
                                  "drop the tag and write a plain string, number, list or mapping")
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise ConfigError(source, line, f"nested deeper than {MAX_DEPTH} levels",
                                      "flatten the structure")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    finally:
        loader.dispose()


def _one_line(text: str) -> str:
    """PyYAML's messages carry a position line; the gate prints one line."""
    return " ".join(text.split())


def _line_at(text: str | bytes, position: int | None) -> int | None:
    if position is None:
        return None
    head = text[:position]
    return (head.count(b"\n") if isinstance(head, bytes) else head.count("\n")) + 1


def _walk(node: yaml.Node, path: Path, lines: dict[Path, int], source: str) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise ConfigError(
                    source, line, f"duplicate key {key!r}", "keep one of the two entries"
                )
            seen.add(key)
            lines[(*path, key)] = line
            _walk(value_node, (*path, key), lines, source)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*path, index)] = item.start_mark.line + 1
            _walk(item, (*path, index), lines, source)


def _where(path: Path) -> str:
    return ".".join(str(p) for p in path) or "the top level"


def check_keys(
    doc: Doc,
    path: Path,
    value: Any,
    allowed: Iterable[str],
    required: Iterable[str] = (),
) -> Mapping[str, Any]:
    """``value`` must be a mapping with only ``allowed`` keys and every ``required`` one."""
    allowed = tuple(allowed)
    if not isinstance(value, Mapping):
        raise doc.error(
            path, f"{_where(path)} must be a mapping, not {_kind(value)}", "write it as key: value lines"
        )
    for key in value:
        if key not in allowed:
            raise doc.error(
                (*path, key),
                f"unknown key {key!r} in {_where(path)}",
                f"remove it or use one of: {', '.join(allowed)}",
            )
    for key in required:
        if key not in value or value[key] is None:
            raise doc.error(path, f"{_where(path)} lacks required key {key!r}", f"add {key}: ...")
    return value


def expect(doc: Doc, path: Path, value: Any, kind: type | tuple[type, ...], hint: str) -> Any:
    """``value`` must be of ``kind`` (bool is never accepted as int)."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
    if not ok:
        raise doc.error(path, f"{_where(path)} must be {hint}, not {_kind(value)}", f"write {hint}")
    if isinstance(value, float) and not math.isfinite(value):  # .inf and .nan are floats no limit honours
        raise doc.error(path, f"{_where(path)} must be a finite number, not {value}", f"write {hint}")
    return value


def str_list(doc: Doc, path: Path, value: Any) -> tuple[str, ...]:
    """A list of strings (a lone string is accepted as a list of one)."""
    if isinstance(value, str):
        return (value,)
    expect(doc, path, value, list, "a list of strings")
    for index, item in enumerate(value):
        expect(doc, (*path, index), item, str, "a string")
    return tuple(value)


def _kind(value: Any) -> str:
    if value is None:
        return "empty"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )
