"""``gate manifest sign|verify``: the signed list of guarded files."""

from __future__ import annotations

import argparse

from mergegate.errors import UsageError
from mergegate.git import core
from mergegate.records import manifest, repo


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    sign = sub.add_parser("sign", help="write the manifest for the index (default) or a revision")
    verify = sub.add_parser("verify", help="check it against the index (default), a revision or the work tree")
    for p in (sign, verify):
        group = p.add_mutually_exclusive_group()
        group.add_argument("--staged", action="store_true", help="the index (default)")
        group.add_argument("--rev", metavar="R", help="a revision")
    verify.add_argument("--worktree", action="store_true", help="the files on disk")


def run(args: argparse.Namespace) -> int:
    top = core.toplevel()
    if args.action == "sign":
        return _sign(args, top)
    return _verify(args, top)


def _sign(args: argparse.Namespace, top: object) -> int:
    if args.rev:
        rev = core.must_resolve(args.rev, str(top))
        pol = repo.load_policy(rev, str(top))
        changed = manifest.sign(rev, pol, str(top))
    else:
        pol = repo.load_policy(None, str(top))
        changed = manifest.sign_staged(pol, str(top))
    print(f"{pol.paths.manifest}: {'re-signed' if changed else 'up to date'}")
    return 0


def _verify(args: argparse.Namespace, top: object) -> int:
    if args.worktree and args.rev:
        raise UsageError("--worktree and --rev exclude each other", "pick one")
    if args.worktree:
        pol = repo.load_policy(None, str(top))
        path = top / pol.paths.manifest  # type: ignore[operator]
        if not path.is_file():
            raise UsageError(f"no {pol.paths.manifest}", "run `gate manifest sign --staged`")
        recorded = manifest.parse(path.read_bytes(), pol.paths.manifest)
        report = manifest.compare(recorded, manifest.worktree_rows(pol, str(top)))
        count = len(recorded)
    else:
        rev = core.must_resolve(args.rev, str(top)) if args.rev else None
        pol = repo.load_policy(rev, str(top))
        report = manifest.verify_at(rev, pol, str(top))
        count = len(manifest.recorded_at(rev, pol, str(top)) or [])
    if report.ok:
        print(f"{pol.paths.manifest}: OK ({count} files)")
        return 0
    for line in report.lines():
        print(line)
    print(f"{pol.paths.manifest}: does not verify; fix: {manifest.FIX}")
    return 1
