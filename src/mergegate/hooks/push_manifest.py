"""Manifest verification for every pushed commit, incrementally.

Listing each commit's tree would cost a process per commit.  Instead the signed
files of each new commit are derived from its first parent's plus the diff the
push log already holds; only the boundary parents (commits the server already
had) are listed once.  Blob hashes come from the manifest's blob-id cache, so a
commit re-hashes only blobs nobody hashed before, all through one ``cat-file``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from mergegate import gitio, manifest
from mergegate.errors import GateError
from mergegate.gitio import GITLINK_MODE, SYMLINK_MODE, LoggedCommit
from mergegate.policy import MANIFEST, POLICY_FILE, SIGNED, Policy

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
                e.path: (e.mode, e.sha) for e in gitio.ls_tree(commit, self.cwd) if self.tracked(e.path)
            }
        return self._boundary[commit]

    def build(self, commits: Iterable[LoggedCommit]) -> None:
        """Derive every commit's files; ``commits`` must come parents first."""
        for commit in commits:
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
    texts = dict(gitio.read_blobs(manifest_blobs, cwd))
    reports: dict[str, manifest.Report] = {}
    for sha in shas:
        report = _report(trees.files[sha], policy, texts, cache)
        if not report.ok:
            own = trees.files[sha].get(POLICY_FILE)
            if own is not None and own[1] != trusted_policy_blob:
                report = _own_policy_report(sha, cwd, report)
        reports[sha] = report
    return reports


def _report(files: Files, policy: Policy, texts: dict[str, bytes], cache: manifest.BlobCache
            ) -> manifest.Report:
    mpath = policy.paths.manifest
    if mpath not in files:
        return manifest.Report(problems=(f"no {mpath} in this commit",))
    mode, blob = files[mpath]
    if mode in (SYMLINK_MODE, GITLINK_MODE):
        return manifest.Report(problems=(f"{mpath} is not a regular file",))
    odd = sorted(p for p, (m, _b) in files.items() if p != mpath and m in (SYMLINK_MODE, GITLINK_MODE))
    if odd:
        return manifest.Report(problems=(f"{odd[0]} is a symlink or submodule on a signed path",))
    try:
        recorded = manifest.parse(texts[blob], mpath)
    except GateError as exc:
        return manifest.Report(problems=(exc.render(),))
    actual = [manifest.Row(*cache.known[b], p) for p, (_m, b) in files.items() if p != mpath]
    return manifest.compare(recorded, actual)


def _own_policy_report(sha: str, cwd: str | Path | None, trusted_report: manifest.Report
                       ) -> manifest.Report:
    """The commit's own policy's view; any problem with it leaves the trusted report standing."""
    from mergegate import repo

    try:
        own = repo.load_policy(sha, cwd)
        report = manifest.verify_at(sha, own, cwd)
    except GateError:
        return trusted_report
    return report if report.ok else trusted_report
