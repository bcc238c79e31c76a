"""The trusted side of a push: gate.yaml (and the allowed signers) as the server had them.

Read for every trusted commit at once (one ``cat-file`` per kind of file, not a
process per ref), so a push of a thousand branches costs what a push of one does;
refs whose trusted sides hold the same bytes are then judged together.

A gate.yaml the server cannot read (or a signers file it names but lacks) never
locks the branch: the side is marked ``broken`` and judged by the last readable
gate.yaml of its first-parent history (else the defaults); the hook then takes only
a person's repair (see ``repair``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from mergegate.errors import ConfigError, InternalError, UsageError
from mergegate.git import blobs as git_blobs
from mergegate.git import core
from mergegate.records import policy

BOOTSTRAP_FIX = ("seed the repository first: push a commit holding gate.yaml with the hook not yet "
                 "installed, then install it (docs/server.md, Bootstrap)")


@dataclass(frozen=True)
class Side:
    """What judges the refs whose trusted commit is ``rev``."""

    rev: str
    policy: policy.Policy
    policy_blob: str
    signers: bytes | None = None  # the allowed signers file, when signatures are required
    broken: str = ""  # why the server's own files cannot judge: only a repair is accepted

    @property
    def key(self) -> tuple[str, bytes | None]:
        """Equal keys judge alike: same policy bytes, same signers."""
        return self.policy_blob + ("!" if self.broken else ""), self.signers


def load(revs: Iterable[str], cwd: str | Path | None = None) -> dict[str, Side]:
    """The trusted side of each commit in ``revs``; missing or broken files reject the push."""
    revs = list(dict.fromkeys(revs))
    blobs = _blob_ids(dict.fromkeys(revs, policy.POLICY_FILE), cwd)
    for rev, blob in blobs.items():
        if blob is None:
            raise UsageError(f"no {policy.POLICY_FILE} at {rev[:12]}, the trusted side of this push",
                             BOOTSTRAP_FIX)
    texts = dict(git_blobs.read_blobs({b for b in blobs.values() if b}, cwd))
    parsed: dict[str, policy.Policy | ConfigError] = {}
    for rev, blob in blobs.items():
        assert blob is not None
        if blob not in parsed:
            try:
                parsed[blob] = policy.parse(texts[blob], f"{policy.POLICY_FILE} (server, at {rev[:12]})")
            except ConfigError as exc:
                parsed[blob] = exc
    sides: dict[str, Side] = {}
    good: dict[str, policy.Policy] = {}
    for rev, blob in blobs.items():
        assert blob is not None
        pol = parsed[blob]
        if isinstance(pol, ConfigError):
            sides[rev] = Side(rev, last_readable(rev, cwd), blob, None, pol.render())
        else:
            good[rev] = pol
    signers, missing = _signers(good, cwd)
    for rev, pol in good.items():
        blob = blobs[rev]
        assert blob is not None
        sides[rev] = Side(rev, pol, blob, signers.get(rev), missing.get(rev, ""))
    return sides


def last_readable(rev: str, cwd: str | Path | None, depth: int = 50) -> policy.Policy:
    """The newest gate.yaml that parses among the last ``depth`` versions on ``rev``'s first-parent
    line (the one before a breakage), else the defaults: what judges a repair."""
    out = core.out(["rev-list", "--first-parent", f"--max-count={depth}", rev, "--", policy.POLICY_FILE], cwd)
    names = [f"{c}{suffix}:{policy.POLICY_FILE}" for c in out.decode().split() for suffix in ("", "^")]
    found = git_blobs.batch_check(names, cwd)
    blobs = [hit[0] for n in names if (hit := found.get(n)) and hit[1] == "blob"]
    texts = dict(git_blobs.read_blobs(blobs, cwd))
    for blob in dict.fromkeys(blobs):
        try:
            return policy.parse(texts[blob], f"{policy.POLICY_FILE} (server, blob {blob[:12]})")
        except ConfigError:
            continue
    return policy.parse(policy.DEFAULT_TEXT, "the default policy")


def _blob_ids(wanted: dict[str, str], cwd: str | Path | None) -> dict[str, str | None]:
    """rev -> blob id of ``wanted[rev]`` there, all in one ``cat-file``; a listed file git cannot
    read is an internal error, not an absent one."""
    found = git_blobs.batch_check([f"{rev}:{path}" for rev, path in wanted.items()], cwd)
    result: dict[str, str | None] = {}
    for rev, path in wanted.items():
        hit = found.get(f"{rev}:{path}")
        if hit is None and core.out(["ls-tree", "--name-only", rev, "--", path], cwd).strip():
            raise InternalError(f"{path} at {rev[:12]} is listed but cannot be read "
                                "(object missing or corrupt)", "run `git fsck` on the server repository")
        result[rev] = hit[0] if hit and hit[1] == "blob" else None
    return result


def _signers(policies: dict[str, policy.Policy], cwd: str | Path | None
             ) -> tuple[dict[str, bytes], dict[str, str]]:
    """The allowed signers file of every trusted commit whose policy requires signatures, and
    why it is missing where it is (such a side is broken: only a repair is accepted)."""
    wanted: dict[str, str] = {}
    missing: dict[str, str] = {}
    for rev, pol in policies.items():
        if not pol.server.require_signed_oracle_commits:
            continue
        if not pol.server.allowed_signers:
            missing[rev] = ("server.require_signed_oracle_commits is on but server.allowed_signers "
                            "is not set")
            continue
        wanted[rev] = pol.server.allowed_signers
    blobs = _blob_ids(wanted, cwd) if wanted else {}
    for rev, blob in blobs.items():
        if blob is None:
            missing[rev] = f"server.allowed_signers: {wanted[rev]} is not in the trusted commit {rev[:12]}"
    data = dict(git_blobs.read_blobs({b for b in blobs.values() if b}, cwd))
    return {rev: data[blob] for rev, blob in blobs.items() if blob}, missing
