"""Seed 002's four canaries, run for real against the base revision (git applies the patch in a private index)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mergegate.git import blobs, gitpatch
from mergegate.records.policy import PRODUCTION, Policy
from mergegate.rules.admission import CanaryResult, canary_no_secret_marker, canary_parse_diff, canary_public_signature


def run_canaries(diff: bytes, base: str, policy: Policy, cwd: str | Path | None = None) -> tuple[CanaryResult, ...]:
    """The four canaries against ``base`` in ``cwd``'s repository, in order, stopping at a miss.

    ``apply_check`` applies the patch to ``base`` in a temporary index (no work
    tree).  The later canaries read git's own reading of it (``gitpatch``): the
    files and added lines git really applied, never our parser's.
    """
    parse, parsed = canary_parse_diff(diff)
    if parsed is None:
        return (parse,)
    reading = gitpatch.read(diff, base, cwd)
    ok, message, tree = reading.ok, reading.message, reading.tree
    apply = CanaryResult("apply_check", ok, message if ok else f"does not apply to {base[:12]}: {message}")
    if tree is None or reading.parsed is None:
        return parse, apply
    applied = reading.parsed
    binaries = [f.new_path for f in applied.files if f.binary and f.new_path is not None]
    secret = canary_no_secret_marker(applied, policy.canaries.secret_markers, blobs.files_at(tree, binaries, cwd))
    if not secret.ok:
        return parse, apply, secret
    modules = [p for p in applied.touched if p.endswith(".py") and policy.classify(p) == PRODUCTION]
    before = _sources(base, modules, cwd)
    after = _sources(tree, modules, cwd)
    return parse, apply, secret, canary_public_signature(before, after)


def _sources(treeish: str, paths: Sequence[str], cwd: str | Path | None) -> dict[str, bytes | None]:
    found = blobs.files_at(treeish, paths, cwd)
    return {p: found.get(p) for p in paths}
