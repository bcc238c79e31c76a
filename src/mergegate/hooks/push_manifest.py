"""Manifest verification for every pushed commit, incrementally.

Listing each commit's tree would cost a process per commit.  Instead the signed
files of each new commit are derived from its first parent's plus the diff the
push log already holds; only the boundary parents (commits the server already
had) are listed once.  Blob hashes come from the manifest's blob-id cache, so a
commit re-hashes only blobs nobody hashed before, all through one ``cat-file``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from mergegate.errors import GateError
from mergegate.git import blobs
from mergegate.git.blobs import GITLINK_MODE, SYMLINK_MODE
from mergegate.git.history import LoggedCommit
from mergegate.records import manifest
from mergegate.records.policy import MANIFEST, POLICY_FILE, SIGNED, Policy

Files = dict[str, tuple[str, str]]  # path -> (mode, blob id): the signed files plus the manifest
_DELETED = "000000"


class SignedTrees:
    """The tracked files of each new commit under one (trusted) policy."""

    def __init__(self, policy: Policy, cwd: str | Path | None) -> None:
        self.policy = policy
        self.cwd = cwd
        self._classes: dict[str, str] = {}
        self._boundary: dict[str, Files] = {}
        self.files: dict[str, Files] = {}

    def tracked(self, path: str) -> bool:
        cls = self._classes.get(path)
        if cls is None:
            cls = self._classes[path] = self.policy.classify(path)
        return cls in SIGNED or cls == MANIFEST

    def _listed(self, commit: str) -> Files:
        if commit not in self._boundary:
            self._boundary[commit] = {
                e.path: (e.mode, e.sha) for e in blobs.ls_tree(commit, self.cwd) if self.tracked(e.path)
            }
        return self._boundary[commit]

    def build(self, commits: Iterable[LoggedCommit]) -> None:
        """Derive every commit's files, in any order: each first-parent chain is walked once."""
        by_sha = {c.sha: c for c in commits}
        for commit in by_sha.values():
            chain: list[LoggedCommit] = []
            current: LoggedCommit | None = commit
            while current is not None and current.sha not in self.files:
                chain.append(current)
                parent = current.parents[0] if current.parents else None
                current = by_sha.get(parent) if parent else None
            for link in reversed(chain):
                self._derive(link)

    def _derive(self, commit: LoggedCommit) -> None:
        parent = commit.parents[0] if commit.parents else None
        if parent is None:
            base: Files = {}
        else:
            base = self.files[parent] if parent in self.files else self._listed(parent)
        delta = [c for c in commit.changes if self.tracked(c.path)]
        files = dict(base) if delta else base  # share the parent's map when nothing moved
        for change in delta:
            if change.new_mode == _DELETED:
                files.pop(change.path, None)
            else:
                files[change.path] = (change.new_mode, change.new_sha)
        self.files[commit.sha] = files


class _Lines:
    """Manifest lines by (path, blob), rendered once per push, joined in manifest order."""

    def __init__(self, cache: manifest.BlobCache) -> None:
        self.cache = cache
        self.lines: dict[tuple[str, str], tuple[bytes, bytes]] = {}

    def text(self, files: Files, skip: str) -> bytes:
        parts = []
        for path, (_mode, blob) in files.items():
            if path == skip:
                continue
            hit = self.lines.get((path, blob))
            if hit is None:
                row = manifest.Row(*self.cache.known[blob], path)
                hit = self.lines[(path, blob)] = (os.fsencode(path), manifest.render([row]))
            parts.append(hit)
        parts.sort()  # by path bytes, as manifest.render sorts
        return b"".join(line for _key, line in parts)


def verify(trees: SignedTrees, shas: list[str], trusted_policy_blob: str | None
           ) -> dict[str, manifest.Report]:
    """A manifest report for each of ``shas`` (whose files ``trees`` has built).

    A commit whose tree carries a gate.yaml other than the trusted one may instead
    match the manifest its own policy implies (a person's reclassification, signed the
    way the client hook signs it); every other rule still uses the trusted policy.
    """
    policy, cwd = trees.policy, trees.cwd
    cache = manifest.BlobCache(cwd)
    signed_blobs: set[str] = set()
    manifest_blobs: set[str] = set()
    for sha in shas:
        for path, (mode, blob) in trees.files[sha].items():
            if path == policy.paths.manifest:
                manifest_blobs.add(blob)
            elif mode not in (SYMLINK_MODE, GITLINK_MODE):
                signed_blobs.add(blob)
    cache.fill(signed_blobs)
    lines = _Lines(cache)
    reports: dict[str, manifest.Report] = {}
    suspects: dict[str, str] = {}  # commit -> its manifest blob, which is not the expected text
    for sha in shas:
        files = trees.files[sha]
        report = _shape(files, policy.paths.manifest)
        if report is not None:
            reports[sha] = report
            continue
        blob = files[policy.paths.manifest][1]
        # Compare ids, not bytes: the recorded manifest need not even be read when it is right.
        if git_blob_id(lines.text(files, policy.paths.manifest), len(blob)) == blob:
            reports[sha] = manifest.Report()
        else:
            suspects[sha] = blob
    texts = dict(blobs.read_blobs(suspects.values(), cwd))
    for sha, blob in suspects.items():
        report = _compare(trees.files[sha], policy.paths.manifest, texts[blob], cache)
        own = trees.files[sha].get(POLICY_FILE)
        if own is not None and own[1] != trusted_policy_blob:
            report = _own_policy_report(sha, cwd, report)
        reports[sha] = report
    return reports


def git_blob_id(data: bytes, digits: int) -> str:
    """The id git gives ``data`` as a blob (SHA-1: 40 digits, SHA-256: 64)."""
    algorithm = "sha1" if digits == 40 else "sha256"
    return hashlib.new(algorithm, b"blob %d\0" % len(data) + data).hexdigest()


def _shape(files: Files, mpath: str) -> manifest.Report | None:
    """A problem no manifest text can fix (absent manifest, symlink, submodule), or None."""
    if mpath not in files:
        return manifest.Report(problems=(f"no {mpath} in this commit",))
    if files[mpath][0] in (SYMLINK_MODE, GITLINK_MODE):
        return manifest.Report(problems=(f"{mpath} is not a regular file",))
    odd = sorted(p for p, (m, _b) in files.items() if p != mpath and m in (SYMLINK_MODE, GITLINK_MODE))
    if odd:
        return manifest.Report(problems=(f"{odd[0]} is a symlink or submodule on a signed path",))
    return None


def _compare(files: Files, mpath: str, text: bytes, cache: manifest.BlobCache) -> manifest.Report:
    try:
        recorded = manifest.parse(text, mpath)
    except GateError as exc:
        return manifest.Report(problems=(exc.render(),))
    actual = [manifest.Row(*cache.known[b], p) for p, (_m, b) in files.items() if p != mpath]
    return manifest.compare(recorded, actual)  # same judgement as `gate manifest verify`


def _own_policy_report(sha: str, cwd: str | Path | None, trusted_report: manifest.Report
                       ) -> manifest.Report:
    """The commit's own policy's view; any problem with it leaves the trusted report standing."""
    from mergegate.records import repo

    try:
        own = repo.load_policy(sha, cwd)
        report = manifest.verify_at(sha, own, cwd)
    except GateError:
        return trusted_report
    return report if report.ok else trusted_report
