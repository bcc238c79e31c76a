"""The trusted side of a push: gate.yaml (and the allowed signers) as the server had them.

Read for every trusted commit at once (one ``cat-file`` per kind of file, not a
process per ref), so a push of a thousand branches costs what a push of one does;
refs whose trusted sides hold the same bytes are then judged together.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from mergegate import gitio, policy
from mergegate.errors import InternalError, UsageError

BOOTSTRAP_FIX = ("seed the repository first: push a commit holding gate.yaml with the hook not yet "
                 "installed, then install it (docs/server.md, Bootstrap)")


@dataclass(frozen=True)
class Side:
    """What judges the refs whose trusted commit is ``rev``."""

    rev: str
    policy: policy.Policy
    policy_blob: str
    signers: bytes | None = None  # the allowed signers file, when signatures are required

    @property
    def key(self) -> tuple[str, bytes | None]:
        """Equal keys judge alike: same policy bytes, same signers."""
        return self.policy_blob, self.signers


def load(revs: Iterable[str], cwd: str | Path | None = None) -> dict[str, Side]:
    """The trusted side of each commit in ``revs``; missing or broken files reject the push."""
    revs = list(dict.fromkeys(revs))
    blobs = _blob_ids(dict.fromkeys(revs, policy.POLICY_FILE), cwd)
    for rev, blob in blobs.items():
        if blob is None:
            raise UsageError(f"no {policy.POLICY_FILE} at {rev[:12]}, the trusted side of this push",
                             BOOTSTRAP_FIX)
    texts = dict(gitio.read_blobs({b for b in blobs.values() if b}, cwd))
    parsed: dict[str, policy.Policy] = {}
    for rev, blob in blobs.items():
        assert blob is not None
        if blob not in parsed:
            parsed[blob] = policy.parse(texts[blob], f"{policy.POLICY_FILE} (server, at {rev[:12]})")
    signers = _signers({rev: parsed[b] for rev, b in blobs.items() if b}, cwd)
    return {rev: Side(rev, parsed[b], b, signers.get(rev)) for rev, b in blobs.items() if b}


def _blob_ids(wanted: dict[str, str], cwd: str | Path | None) -> dict[str, str | None]:
    """rev -> blob id of ``wanted[rev]`` there, all in one ``cat-file``; a listed file git cannot
    read is an internal error, not an absent one."""
    found = gitio.batch_check([f"{rev}:{path}" for rev, path in wanted.items()], cwd)
    result: dict[str, str | None] = {}
    for rev, path in wanted.items():
        hit = found.get(f"{rev}:{path}")
        if hit is None and gitio.out(["ls-tree", "--name-only", rev, "--", path], cwd).strip():
            raise InternalError(f"{path} at {rev[:12]} is listed but cannot be read "
                                "(object missing or corrupt)", "run `git fsck` on the server repository")
        result[rev] = hit[0] if hit and hit[1] == "blob" else None
    return result


def _signers(policies: dict[str, policy.Policy], cwd: str | Path | None) -> dict[str, bytes]:
    """The allowed signers file of every trusted commit whose policy requires signatures."""
    wanted: dict[str, str] = {}
    for rev, pol in policies.items():
        if not pol.server.require_signed_oracle_commits:
            continue
        if not pol.server.allowed_signers:
            raise UsageError("server.require_signed_oracle_commits is on but server.allowed_signers "
                             "is not set", "name the allowed signers file in gate.yaml")
        wanted[rev] = pol.server.allowed_signers
    blobs = _blob_ids(wanted, cwd) if wanted else {}
    for rev, blob in blobs.items():
        if blob is None:
            raise UsageError(f"server.allowed_signers: {wanted[rev]} is not in the trusted commit "
                             f"{rev[:12]}", "commit the allowed signers file in an oracle-only commit")
    data = dict(gitio.read_blobs({b for b in blobs.values() if b}, cwd))
    return {rev: data[blob] for rev, blob in blobs.items() if blob}
