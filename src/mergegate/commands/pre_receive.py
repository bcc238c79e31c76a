"""``gate pre-receive``: git's server-side hook; refuses a push that breaks the gate's rules.

Exit 0 accepts the push; anything else rejects it, internal errors included
(fail closed).  Every message is one line; ``--format gitlab`` prefixes each
with ``GL-HOOK-ERR:`` so GitLab shows it to the pusher.
"""

from __future__ import annotations

import argparse
import sys

from mergegate.errors import EXIT_INTERNAL, EXIT_NO, GateError
from mergegate.hooks.receive_rules import GITLAB_PREFIX, render


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("plain", "gitlab"), default="plain",
                        help="gitlab: prefix each line with GL-HOOK-ERR: (GitLab server hooks)")


def _say(line: str, fmt: str) -> None:
    line = line.replace("\n", " ").replace("\r", " ")
    print((GITLAB_PREFIX if fmt == "gitlab" else "") + line, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from mergegate.hooks import pre_receive

    fmt = args.format
    try:
        judgement = pre_receive.judge_push(sys.stdin.buffer.read())
    except GateError as exc:
        _say(f"gate pre-receive: {exc.render()} (push rejected)", fmt)
        return exc.exit_code
    except Exception as exc:  # fail closed, one line, no traceback for the pusher to read
        _say(f"gate pre-receive: internal error {type(exc).__name__}: {exc} (push rejected)", fmt)
        return EXIT_INTERNAL
    for warning in judgement.warnings:  # on every push, accepted or not, until the policy says how
        _say(f"gate pre-receive: {warning}", fmt)
    lines = render(judgement.refusals, fmt)
    for line in lines:
        print(line, file=sys.stderr)
    if judgement.ok:
        _say(f"gate pre-receive: {judgement.commits} new commit(s) checked, push accepted", "plain")
        return 0
    # One line per refused commit or ref (its rules joined): the count is of those lines.
    _say(f"gate pre-receive: push rejected ({len(lines)} refused commit(s) or ref(s)); "
         "no ref was updated", fmt)
    return EXIT_NO
