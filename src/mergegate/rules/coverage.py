"""Change coverage (pure): which changed, executable production lines the head's runs executed.

A line is *executable* when the compiled module's line tables name it
(``co_lines()`` of the module's code object and every code object nested in it);
docstrings, comments and blank lines are not.  Compiling runs none of the source.
The lines a run executed are production's own report (a tracer in the subject
process): it catches the change no property looks at, and a hostile patch can
fake it; the docs say so.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

UNEXERCISED_CHANGE = "unexercised_change"
REVIEW, ADMIT = "review", "admit"


def executable_lines(source: bytes, filename: str = "<production>") -> frozenset[int] | None:
    """The lines of ``source`` that carry code, or None when it does not compile."""
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
        tree = ast.parse(source, filename)
    except (SyntaxError, ValueError):
        return None
    lines: set[int] = set()
    stack = [code]
    while stack:
        co = stack.pop()
        lines.update(line for _start, _end, line in co.co_lines() if line is not None and line > 0)
        stack.extend(c for c in co.co_consts if isinstance(c, types.CodeType))
    return frozenset(lines - docstring_lines(tree))


def docstring_lines(tree: ast.AST) -> set[int]:
    """Lines of the module's, every class's and every function's docstring."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                out.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return out


Lines = Mapping[str, Collection[int]]


@dataclass(frozen=True)
class Report:
    """The changed executable lines, which of them the head's runs reached, and which property did."""

    changed: Mapping[str, tuple[int, ...]]  # path -> changed executable lines
    reached: Mapping[str, tuple[int, ...]]
    by_prop: Mapping[str, Mapping[str, tuple[int, ...]]]  # prop -> path -> changed lines it executed
    threshold: float = 1.0
    unmeasured: tuple[str, ...] = field(default=())  # head runs that reported no lines (crashed, from elsewhere)

    @property
    def total(self) -> int:
        return sum(len(v) for v in self.changed.values())

    @property
    def reached_count(self) -> int:
        return sum(len(v) for v in self.reached.values())

    @property
    def fraction(self) -> float:
        return 1.0 if not self.total else self.reached_count / self.total

    @property
    def ok(self) -> bool:
        return self.fraction >= self.threshold

    @property
    def unreached(self) -> dict[str, tuple[int, ...]]:
        out = {}
        for path, lines in self.changed.items():
            missing = tuple(n for n in lines if n not in set(self.reached.get(path, ())))
            if missing:
                out[path] = missing
        return out

    @property
    def at_import_only(self) -> dict[str, tuple[int, ...]]:
        """Reached lines no property's own run executed: they ran when production was imported."""
        out = {}
        for path, lines in self.reached.items():
            own = {n for paths in self.by_prop.values() for n in paths.get(path, ())}
            rest = tuple(n for n in lines if n not in own)
            if rest:
                out[path] = rest
        return out

    def to_dict(self) -> dict[str, object]:
        return {
            "threshold": self.threshold, "fraction": round(self.fraction, 4), "ok": self.ok,
            "changed_lines": self.total, "reached_lines": self.reached_count,
            "changed": {p: list(v) for p, v in sorted(self.changed.items())},
            "reached": {p: list(v) for p, v in sorted(self.reached.items())},
            "unreached": {p: list(v) for p, v in sorted(self.unreached.items())},
            "at_import_only": {p: list(v) for p, v in sorted(self.at_import_only.items())},
            "by_property": {prop: {p: list(v) for p, v in sorted(paths.items())}
                            for prop, paths in sorted(self.by_prop.items())},
            "unmeasured_runs": list(self.unmeasured),
            "source": "the subject's own tracer (production's report: a hostile patch can fake it)",
        }


def report(changed: Lines, executable: Mapping[str, Collection[int] | None],
           runs: Iterable[tuple[str, Lines, Lines]], threshold: float = 1.0,
           unmeasured: Iterable[str] = ()) -> Report:
    """Changed lines that are executable (a file that does not compile: every changed line), and
    which of them each property's runs executed.

    ``runs``: ``(prop, lines run, lines of those run while production was imported)``.  Every run
    line counts as reached; a property is said to reach a line only when its own run executed it,
    not when the import before any property did.
    """
    counted: dict[str, tuple[int, ...]] = {}
    for path, lines in changed.items():
        code = executable.get(path)
        kept = sorted(set(lines) if code is None else set(lines) & set(code))
        if kept:
            counted[path] = tuple(kept)
    reached: dict[str, set[int]] = {}
    by_prop: dict[str, dict[str, set[int]]] = {}
    for prop, ran, at_import in runs:
        for path, lines in ran.items():
            hit = set(counted.get(path, ())) & set(lines)
            if hit:
                reached.setdefault(path, set()).update(hit)
            own = hit - set(at_import.get(path, ()))
            if own:
                by_prop.setdefault(prop, {}).setdefault(path, set()).update(own)
    return Report(
        changed=counted, reached={p: tuple(sorted(v)) for p, v in reached.items()},
        by_prop={prop: {p: tuple(sorted(v)) for p, v in paths.items()} for prop, paths in by_prop.items()},
        threshold=threshold, unmeasured=tuple(sorted(set(unmeasured))),
    )


def decide(decision: str, reason: str, rep: Report | None, action: str) -> tuple[str, str]:
    """An admit whose change the runs did not reach enough becomes ``review/unexercised_change``
    (``action: review``, the default); every other decision stands."""
    if rep is None or rep.ok or decision != ADMIT or action != REVIEW:
        return decision, reason
    return REVIEW, UNEXERCISED_CHANGE


def ranges(lines: Iterable[int]) -> str:
    """``3-5, 9``: sorted line numbers as compact ranges."""
    out: list[str] = []
    ordered = sorted(set(lines))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ", ".join(out)
