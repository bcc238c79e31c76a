"""A checked-out tree under test: its production roots, fixture digest, and what production may not see."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mergegate.records import digest
from mergegate.records.policy import CATALOG, FIXTURE, ORACLE, Policy
from mergegate.rules import globs


@dataclass(frozen=True)
class Tree:
    """A checked-out tree under test."""

    root: Path
    prod_roots: tuple[str, ...]
    fixture_digest: str
    label: str = ""
    trace: tuple[str, ...] = ()  # relative production files whose executed lines the runs record


def literal_prefix(pattern: str) -> str:
    """The directory part of a glob before its first wildcard."""
    parts = []
    for part in pattern.strip("/").split("/"):
        if any(c in part for c in "*?["):
            break
        parts.append(part)
    return "/".join(parts)


def import_roots(patterns: Sequence[str], is_file: Callable[[str], bool]) -> list[str]:
    """Import roots (relative) of production globs: ``src/**`` -> src; a package dir -> its parent.

    ``is_file`` answers for a relative path, on disk or in a git listing.
    """
    roots = []
    for pattern in patterns:
        root = literal_prefix(pattern)
        if root and is_file(root):  # a file: its directory
            root = root.rpartition("/")[0]
        while root and is_file(f"{root}/__init__.py"):
            root = root.rpartition("/")[0]
        roots.append(root)
    return list(dict.fromkeys(roots))


def production_roots(root: Path, policy: Policy) -> tuple[str, ...]:
    """Absolute import roots of the production globs in the tree at ``root``."""
    found = import_roots(policy.paths.production, lambda rel: (root / rel).is_file())
    return tuple(str(root / r) if r else str(root) for r in found)


def files_matching(root: Path, patterns: Sequence[str]) -> dict[str, bytes]:
    """``{relative path: bytes}`` of the regular files under ``root`` matching ``patterns``."""
    out: dict[str, bytes] = {}
    for start in sorted({literal_prefix(p) for p in patterns}):
        base = root / start if start else root
        candidates = [base] if base.is_file() else (p for p in base.rglob("*") if p.is_file())
        for path in candidates:
            rel = path.relative_to(root).as_posix()
            if not rel.startswith(".git/") and globs.matches(rel, patterns):
                out[rel] = path.read_bytes()
    return out


def tree_digest(root: Path, policy: Policy) -> str:
    """Seed 000's fixture digest of the fixtures directory (one root) or of each root."""
    roots = sorted({literal_prefix(p) for p in policy.paths.fixtures})
    if len(roots) == 1:
        return digest.fixture_digest(root / roots[0])
    return digest.fixture_digest_of({r: digest.fixture_digest(root / r).encode() for r in roots})


def tree_info(root: Path, policy: Policy, label: str = "") -> Tree:
    root = root.resolve()
    return Tree(root, production_roots(root, policy), tree_digest(root, policy), label)


def hidden_paths(root: Path, policy: Policy) -> tuple[str, ...]:
    """Absolute paths of the tree that production must not see: the oracle, fixture and catalog trees.

    A glob's literal directory is hidden whole; oracle or fixture files outside
    those directories (a glob with no literal prefix) are hidden one by one.
    """
    patterns = [*policy.paths.oracle, *policy.paths.fixtures, policy.paths.catalog.rstrip("/") + "/**"]
    dirs = sorted({literal_prefix(p) for p in patterns} - {""})
    hidden = [str(root / d) for d in dirs if (root / d).is_dir() and not (root / d).is_symlink()]
    if any(not literal_prefix(p) for p in patterns):
        for top, subdirs, files in os.walk(root):
            rel_top = os.path.relpath(top, root)
            subdirs[:] = [d for d in subdirs if d != ".git" and os.path.join(top, d) not in hidden]
            for name in files:
                rel = name if rel_top == "." else f"{rel_top}/{name}"
                if policy.classify(rel) in (ORACLE, FIXTURE, CATALOG):
                    hidden.append(os.path.join(top, name))
    return tuple(hidden)
