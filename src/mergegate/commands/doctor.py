"""``gate doctor``: is this repository's adoption whole?  Policy, manifest, catalog, hooks, server settings."""

from __future__ import annotations

import argparse

from mergegate import textsafe
from mergegate.errors import EXIT_NO, EXIT_OK
from mergegate.git import core


def configure(parser: argparse.ArgumentParser) -> None:
    del parser  # no options


def run(args: argparse.Namespace) -> int:
    from mergegate.pipeline import health

    findings = health.run_all(core.toplevel())
    for f in findings:
        print(textsafe.line(f"{f.area:<9} {'ok' if f.ok else 'PROBLEM':<8} {f.what}"))
        if not f.ok and f.fix:
            print(textsafe.line(f"{'':<18} fix: {f.fix}"))
    bad = sum(1 for f in findings if not f.ok)
    print(f"\n{bad} problem(s)" if bad else "\nno problems")
    return EXIT_NO if bad else EXIT_OK
