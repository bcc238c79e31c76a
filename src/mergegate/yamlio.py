"""YAML loading that keeps line numbers, so every error names file, line and fix.

PyYAML's ``safe_load`` forgets where a value came from.  We compose the node
graph once, build plain Python data from it with the safe constructor, and keep
a map from key path to line for the schema checks in policy, catalog and ledger.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from mergegate.errors import ConfigError

try:  # the C loader is several times faster where libyaml is present
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader

Path = tuple[str | int, ...]


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


def load(text: str | bytes, source: str) -> Doc:
    """Parse one YAML document; malformed YAML is a ConfigError with its line."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise ConfigError(
            source, line, f"not valid YAML: {exc.problem or exc.context}", "fix the YAML syntax"
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(source, None, f"not valid YAML: {exc}", "fix the YAML syntax") from None
    finally:
        loader.dispose()
    lines: dict[Path, int] = {}
    if node is not None:
        lines[()] = node.start_mark.line + 1
        _walk(node, (), lines, source)
    return Doc(source, data, lines)


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
