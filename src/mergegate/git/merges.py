"""What many merges take unchanged from a parent, in a fixed number of git processes.

``git_diffs.merge_brought`` answers it for one merge with three processes per other
parent (``merge-base``, two ``diff-tree``); a real history pushed whole holds
hundreds of merges.  Here the same question is answered for all of them with:
  1. one ``rev-list --parents`` over the merges' parents' ancestry; the merge bases
     are computed from that graph in Python (``merge_bases``: pure, exact, by
     generation number, so commit dates an author chose play no part);
  2. one ``diff-tree --stdin`` for every (base, other) and (merge, other) pair.
A path a merge "brings" is one it takes unchanged from another parent that changed
it since *every* merge base of the two (criss-cross histories have several): never
laxer than the single base ``git merge-base`` would pick.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mergegate.git import core
from mergegate.git import diffs as git_diffs

Graph = Mapping[str, tuple[str, ...]]  # commit -> parents


@dataclass(frozen=True)
class Merge:
    """One merge commit, with the paths of its first-parent diff that are in question."""

    sha: str
    parents: tuple[str, ...]
    paths: tuple[str, ...]


def generations(graph: Graph) -> dict[str, int]:
    """Generation number of every commit (1 + the highest of its parents'; a root is 1).

    A parent absent from ``graph`` (a shallow boundary) counts as a root.
    """
    gen: dict[str, int] = {}
    for start in graph:
        stack = [start]
        while stack:
            c = stack[-1]
            if c in gen:
                stack.pop()
                continue
            todo = [p for p in graph.get(c, ()) if p not in gen]
            if todo:
                stack.extend(todo)
                continue
            gen[c] = 1 + max((gen[p] for p in graph.get(c, ())), default=0)
            stack.pop()
    return gen


_ONE, _TWO, _STALE = 1, 2, 4


def merge_bases(a: str, b: str, graph: Graph, gen: Mapping[str, int]) -> list[str]:
    """Every best common ancestor of ``a`` and ``b`` (``git merge-base --all``), by generation."""
    flags = {a: _ONE, b: _TWO} if a != b else {a: _ONE | _TWO}
    queue = [(-gen[c], c) for c in flags]
    heapq.heapify(queue)
    found: list[str] = []
    while any(not flags[c] & _STALE for _g, c in queue):
        _g, c = heapq.heappop(queue)
        f = flags[c] & (_ONE | _TWO | _STALE)
        if f == _ONE | _TWO:
            found.append(c)
            f |= _STALE
            flags[c] |= _STALE
        for p in graph.get(c, ()):
            if p not in gen or flags.get(p, 0) & f == f:
                continue
            flags[p] = flags.get(p, 0) | f
            heapq.heappush(queue, (-gen[p], p))
    found = list(dict.fromkeys(found))
    return [c for c in found if not any(d != c and _reaches(d, c, graph, gen) for d in found)]


def _reaches(d: str, c: str, graph: Graph, gen: Mapping[str, int]) -> bool:
    """Is ``c`` an ancestor of ``d``?  (Walks only commits above ``c``'s generation.)"""
    seen, stack = {d}, [d]
    while stack:
        x = stack.pop()
        if x == c:
            return True
        for p in graph.get(x, ()):
            if p not in seen and gen.get(p, 0) >= gen[c]:
                seen.add(p)
                stack.append(p)
    return False


def ancestry(tips: Sequence[str], cwd: str | Path | None = None) -> dict[str, tuple[str, ...]]:
    """``git rev-list --parents`` of ``tips``: every ancestor with its parents, one process."""
    if not tips:
        return {}
    data = core.out(["rev-list", "--parents", "--stdin"], cwd, "".join(t + "\n" for t in tips).encode())
    graph: dict[str, tuple[str, ...]] = {}
    for line in data.decode().split("\n"):
        if line:
            sha, *parents = line.split(" ")
            graph[sha] = tuple(parents)
    return graph


def pair_diffs(pairs: Sequence[tuple[str, str]], paths: Sequence[str] | None,
               cwd: str | Path | None = None) -> list[set[str]]:
    """The paths differing within each (commit, commit) pair, one ``diff-tree --stdin`` for all.

    ``paths`` limits the diff (None: whole trees).  ``--always`` makes git print a
    header for every input line, so outputs are matched to pairs by position.
    """
    if not pairs:
        return []
    specs = ["--", *(":(literal,top)" + p for p in paths)] if paths is not None else []
    data = core.out(["diff-tree", "--stdin", "--always", "-r", "-z", "--raw", "--no-renames",
                      "--no-abbrev", "--no-ext-diff", *specs], cwd,
                     "".join(f"{x} {y}\n" for x, y in pairs).encode())
    out: list[set[str]] = []
    fields = iter(data.split(b"\0"))
    for field in fields:
        if not field:
            continue
        if field.startswith(b":"):
            if not out:
                raise core.GitFailed("git diff-tree --stdin: a change before any header")
            out[-1].add(os.fsdecode(next(fields, b"")))
        else:
            out.append(set())
    if len(out) != len(pairs):
        raise core.GitFailed(f"git diff-tree --stdin: {len(out)} results for {len(pairs)} pairs")
    return out


def brought(merges: Sequence[Merge], cwd: str | Path | None = None, graph: Graph | None = None
            ) -> dict[str, set[str]]:
    """merge sha -> the paths among its ``paths`` it takes unchanged from a parent that changed them
    since every merge base with its first parent (judged in that parent's own commits).

    ``graph``: the ancestry of every merge's parents, when the caller already has it.
    """
    todo = [m for m in merges if m.paths and len(m.paths) <= git_diffs.MERGE_PATHS_MAX and len(m.parents) > 1]
    result: dict[str, set[str]] = {m.sha: set() for m in merges}
    if not todo:
        return result
    if graph is None:
        graph = ancestry(list(dict.fromkeys(p for m in todo for p in m.parents)), cwd)
    gen = generations(graph)
    pairs: list[tuple[str, str]] = []
    plan: list[tuple[Merge, int, int]] = []  # merge, index of (merge, other), number of (base, other)
    for m in todo:
        for other in m.parents[1:]:
            bases = merge_bases(m.parents[0], other, graph, gen)
            if not bases:
                continue
            plan.append((m, len(pairs), len(bases)))
            pairs.append((m.sha, other))
            pairs += [(other, base) for base in bases]
    # No pathspec: git matches each against every tree entry, slower than diffing whole trees.
    diffs = pair_diffs(pairs, None, cwd)
    for m, at, count in plan:
        side = set.intersection(*diffs[at + 1: at + 1 + count])
        result[m.sha] |= (side - diffs[at]) & set(m.paths)
    return result
