"""``gate queue list | show ID | accept ID | reject ID --reason``: drafted candidates."""

from __future__ import annotations

import argparse
import os
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from mergegate import textsafe
from mergegate.errors import EXIT_NO, UsageError
from mergegate.git import blobs, core
from mergegate.records import repo
from mergegate.rules import agents

if TYPE_CHECKING:
    from mergegate.drafter.queue import Meta


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = sub.add_parser("list", help="queued candidates")
    listing.add_argument("--all", action="store_true", help="also accepted and rejected ones")
    listing.add_argument("--json", action="store_true")
    show = sub.add_parser("show", help="a candidate's code and meta.json")
    show.add_argument("id")
    show.add_argument("--json", action="store_true")
    accept = sub.add_parser("accept", help="install a candidate into the oracle tree (a person only)")
    accept.add_argument("id")
    accept.add_argument("--reviewed", action="store_true",
                        help="I read the candidate as `gate queue show` printed it (required: triage is advisory)")
    accept.add_argument("--force", action="store_true", help="accept although triage did not pass")
    reject = sub.add_parser("reject", help="record why a candidate is refused")
    reject.add_argument("id")
    reject.add_argument("--reason", required=True)


def run(args: argparse.Namespace) -> int:
    top = core.toplevel()
    action: str = args.action
    return int({"list": _list, "show": _show, "accept": _accept, "reject": _reject}[action](args, top))


def _list(args: argparse.Namespace, top: Path) -> int:
    from mergegate.drafter import queue

    metas = [m for m in queue.entries(top) if args.all or m.status == "pending"]
    states = {m.id: state(top, m) for m in metas}
    if args.json:
        print(textsafe.dumps([{**asdict(m), "state": states[m.id]} for m in metas], indent=2))
        return 0
    if not metas:
        print("queue empty" if args.all else "no pending candidates (`gate queue list --all` shows decided ones)")
    for m in metas:
        line = f"{m.id[:12]}  {states[m.id]:<9}  triage {m.triage.get('result', '?')!s:<7}  {m.drafter:<11}  {m.target}"
        print(textsafe.line(line))
    if any(v == DISCARDED for v in states.values()):
        print(f"{DISCARDED}: accepted, but its oracle file is neither staged nor committed (the change was dropped)")
    return 0


DISCARDED = "discarded"


def state(top: Path, meta: Meta) -> str:
    """What the queue says, checked against git: an accepted candidate whose installed file is in
    neither the index nor HEAD was discarded (a person dropped the staged change)."""
    if meta.status != "accepted" or not meta.installed_as:
        return meta.status
    if blobs.file_at(None, meta.installed_as, top) is None and blobs.file_at("HEAD", meta.installed_as, top) is None:
        return DISCARDED
    return meta.status


def _show(args: argparse.Namespace, top: Path) -> int:
    from mergegate.drafter import queue

    meta = queue.find(top, args.id)
    raw = queue.candidate_code(top, meta)
    code = raw.decode("utf-8", errors="replace")
    if args.json:
        print(textsafe.dumps({"meta": asdict(meta), "candidate": code}, indent=2))
        return 0
    # meta.json and the candidate came from a model or the container: shown, never obeyed.
    print(textsafe.text(meta.to_bytes().decode(errors="replace")), end="")
    state = "matches its id" if queue.matches(meta, raw) else "DOES NOT match its id: changed since queued"
    print(f"--- {queue.QUEUE}/{meta.id}/{queue.CANDIDATE} (sha256 {state}; triage is advisory)")
    shown = textsafe.text(code)
    print(shown, end="" if shown.endswith("\n") else "\n")
    return 0


def _accept(args: argparse.Namespace, top: Path) -> int:
    from mergegate.drafter import accept, queue

    root = top
    policy = repo.trusted_policy(root)
    email = core.author_email(root)
    if agents.is_agent(policy, os.environ, email):
        why = agents.agent_reason(policy, os.environ, email)
        print(f"gate queue: accept refused: this is an agent's environment ({why}); "
              "only a person accepts a property into the oracle")
        return EXIT_NO
    meta = queue.find(root, args.id)
    queue.verified_code(root, meta)  # refuse early; checked again under the lock
    if not args.reviewed:  # a triage "pass" waives nothing: the sandbox's report can be forged
        raise UsageError(f"candidate {meta.id[:12]} needs a person's review whatever triage said",
                         "read it with `gate queue show`, then `gate queue accept ID --reviewed`")
    if meta.triage.get("result") != "pass" and not args.force:
        raise UsageError(textsafe.line(f"candidate {meta.id[:12]} did not pass triage ({meta.triage.get('result')})"),
                         "read it with `gate queue show`; accept anyway with --reviewed --force, or reject it")
    done = queue.decide(root, meta.id, "accepted", "", email or "unknown",
                        install=lambda m: accept.install(root, policy, m, queue.verified_code(root, m),
                                                         queue.root(root) / m.id))
    print(f"accepted {done.id[:12]}: installed {done.installed_as} (read-only), catalog entries written, "
          "manifest re-signed; all staged")
    print(textsafe.line(f"commit it on its own: git commit -m 'oracle: accept drafted property for {done.target}'"))
    return 0


def _reject(args: argparse.Namespace, top: Path) -> int:
    from mergegate.drafter import queue

    reason = args.reason.strip()
    if not reason:
        raise UsageError("--reason is empty", "say why, e.g. --reason 'asserts the bug'")
    root = top
    done = queue.decide(root, args.id, "rejected", reason, core.author_email(root) or "unknown")
    print(textsafe.line(f"rejected {done.id[:12]}: {reason}"))
    return 0
