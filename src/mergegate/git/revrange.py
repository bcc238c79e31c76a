"""Revision ranges as git spells them: ``A...B``, ``A..B`` or one commit (against its parent)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mergegate.git import core


@dataclass(frozen=True)
class Range:
    base: str  # the trusted side: policy and catalog are read from here
    head: str


def parse(spec: str, cwd: str | Path | None = None) -> Range:
    """Resolve a range; the base of ``A...B`` is their merge base."""
    if "..." in spec:
        left, right = spec.split("...", 1)
        a, b = core.must_resolve(left or "HEAD", cwd), core.must_resolve(right or "HEAD", cwd)
        return Range(core.merge_base(a, b, cwd), b)
    if ".." in spec:
        left, right = spec.split("..", 1)
        return Range(core.must_resolve(left or "HEAD", cwd), core.must_resolve(right or "HEAD", cwd))
    head = core.must_resolve(spec, cwd)
    parent = core.resolve(f"{head}^1", cwd)
    return Range(parent or core.empty_tree(cwd), head)
