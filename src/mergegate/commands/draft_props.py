"""``gate draft-props``: draft candidate properties in the sandbox and queue them."""

from __future__ import annotations

import argparse
import os

from mergegate import textsafe
from mergegate.git import core
from mergegate.records import repo


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--drafter", help="ghostwriter (offline default) or openai")
    parser.add_argument("--target", action="append", default=[], metavar="MODULE_OR_PATH",
                        help="a module, module.function or path of production code (repeatable)")
    parser.add_argument("--max", dest="max_n", type=int, metavar="N", help="draft for at most N APIs")
    parser.add_argument("--triage-timeout", type=float, default=20.0, metavar="S",
                        help="seconds each candidate may run in triage (default 20)")
    parser.add_argument("--wall-clock", type=float, metavar="S", help="kill the container after S seconds")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from mergegate.drafter import pipeline
    from mergegate.errors import UsageError

    if args.max_n is not None and args.max_n <= 0:
        raise UsageError("--max must be positive", "pass e.g. --max 5")
    top = core.toplevel()
    policy = repo.trusted_policy(top)
    request = pipeline.Request(args.drafter, tuple(args.target), args.max_n, args.triage_timeout, args.wall_clock)
    report = pipeline.draft(top, policy, request, os.environ)
    if args.json:
        print(textsafe.dumps({
            "drafter": report.backend, "model": report.model, "seconds": round(report.seconds, 3),
            "queued": [{"id": q.id, "target": q.target, "new": q.new, "triage": q.triage.to_json()}
                       for q in report.queued],
            "rejected": [{"target": t, "reason": r} for t, r in report.rejected],
            "relay_refused": list(report.relay_refused),
        }, indent=2))
        return 0
    print(f"drafter  {report.backend} ({report.model}): {len(report.queued)} queued, "
          f"{len(report.rejected)} rejected in {report.seconds:.1f} s")
    for q in report.queued:
        witness = q.triage.witness.splitlines()[0][:100] if q.triage.witness else ""
        state = "queued  " if q.new else "known   "
        print(textsafe.line(f"{state} {q.id[:12]}  {q.target}  triage {q.triage.result}"
                            + (f": {witness}" if witness else "")))
    for target, reason in report.rejected:
        print(textsafe.line(f"rejected {target}: {reason.splitlines()[0][:200] if reason else 'no reason'}"))
    for why in report.relay_refused:
        print(textsafe.line(f"relay    refused a request from the sandbox: {why}"))
    if report.queued:
        print("\nReview with `gate queue show ID`; a person accepts with `gate queue accept ID`.")
    return 0
