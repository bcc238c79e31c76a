"""``gate check``: the whole pipeline; exit 0 only when the patch is admitted."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from mergegate import textsafe
from mergegate.errors import EXIT_NO, EXIT_OK, UsageError
from mergegate.git import branches, core, diffs
from mergegate.pipeline.progress import progress_bar
from mergegate.records.fsutil import work_area


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base", help="the target branch or revision; its current tip is the trusted side and a "
                        "head forked before it is judged as the merge result (default: the repository's "
                        "default branch: origin/HEAD, else init.defaultBranch, main or master)")
    parser.add_argument("--require-up-to-date", action="store_true", help="refuse a head that does not contain "
                        "the target's tip (stale_base) instead of judging the merge result")
    parser.add_argument("--head", help="the patch revision (default: HEAD; the work tree must be clean)")
    parser.add_argument("--evidence", metavar="DIR", help="write the evidence packet here "
                        "(default: .gate/evidence/<merge-base>-<head>)")
    parser.add_argument("--json", action="store_true", help="print decision.json instead of the table")
    parser.add_argument("--junit", metavar="FILE", help="also write JUnit XML (one testcase per property)")
    parser.add_argument("--markdown", metavar="FILE", help="also write a Markdown summary (CI step summary)")
    parser.add_argument("--base-runs", metavar="FILE", help="base rows made elsewhere (merged CI shards); "
                        "with --head-runs, nothing is run here")
    parser.add_argument("--head-runs", metavar="FILE", help="head rows made elsewhere (merged CI shards; run with "
                        "gate run --coverage-base, or every changed line counts as unmeasured)")
    parser.add_argument("--fresh-seeds", metavar="SEEDS", help="with --base-runs/--head-runs: the fresh seeds the "
                        "shards ran (gate run --fresh-seeds); without the runs, a check draws its own")
    parser.add_argument("-j", "--jobs", type=int, help="processes in parallel (default: one per core)")


def run(args: argparse.Namespace) -> int:
    from mergegate.ci import github

    if not github.enabled(os.environ):
        return _run(args)[0]
    from mergegate.commands import _github_out

    return _github_out.fenced(lambda: _run(args))


def _run(args: argparse.Namespace) -> tuple[int, Any]:
    from mergegate.pipeline import check, evidence

    if args.base is None and args.head is None:
        args.base, args.head = _from_event(args)
    head = args.head
    if head is None:
        dirty = diffs.tracked_changes()
        if dirty:
            raise UsageError(f"the work tree has uncommitted changes ({dirty[0]}, ...) that a check of HEAD "
                             "would not see", "commit them, or pass --head REV explicitly")
        head = "HEAD"
    if bool(args.base_runs) != bool(args.head_runs):
        raise UsageError("--base-runs and --head-runs go together", "pass both merged run files, or neither")
    runs = (Path(args.base_runs), Path(args.head_runs)) if args.base_runs else None
    if args.fresh_seeds and runs is None:
        raise UsageError("--fresh-seeds goes with --base-runs/--head-runs",
                         "drop it: a check that runs the properties draws its own fresh seeds")
    from mergegate.commands.run import parse_seeds

    fresh = parse_seeds(args.fresh_seeds) if args.fresh_seeds else ()
    base = branches.base_or_default(args.base)
    with progress_bar(quiet=args.json) as progress:
        outcome = check.check(base, head, environ=os.environ, jobs=args.jobs, progress=progress, runs=runs,
                              require_up_to_date=args.require_up_to_date, fresh=fresh)
    where = Path(args.evidence) if args.evidence else evidence.default_dir(work_area(core.toplevel()), outcome)
    evidence.write_packet(outcome, where)
    if args.junit:
        _write(args.junit, evidence.junit(outcome))
    if args.markdown:
        _write(args.markdown, evidence.markdown(outcome))
    if args.json:
        print(json.dumps({**evidence.decision_json(outcome), "evidence": str(where)}, indent=2, sort_keys=True))
    else:
        _print_table(outcome, where)
    return (EXIT_OK if outcome.admitted else EXIT_NO), (outcome, where)


def _from_event(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """In a GitHub Actions job on a pull request or a merge group: its base and head, from the event."""
    from mergegate.ci import github

    if not github.enabled(os.environ):
        return None, None
    found = github.event_revisions(os.environ, github.event_payload(os.environ))
    return found if found is not None else (None, None)


def _write(path: str, text: str) -> None:
    from mergegate.records import fsutil

    fsutil.atomic_write(path, text.encode())


def _print_table(outcome: Any, where: Path) -> None:
    from mergegate.pipeline import evidence

    if sys.stdout.isatty():
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table

        colour = {"pass": "green", "fail": "red", "inconclusive": "yellow"}
        table = Table("property", "verdict", "reason", "detail")
        for prop, verdict, reason, detail in evidence.prop_rows(outcome):
            table.add_row(escape(prop), f"[{colour.get(verdict, 'white')}]{verdict}[/]", reason, escape(detail))
        Console().print(table)
    else:
        print(evidence.table_text(outcome))
    failures = evidence.failure_text(outcome) + evidence.manifest_text(outcome) + evidence.dependency_text(outcome)
    if failures:
        print()
        print("\n".join(failures))
    from mergegate.pipeline import coverage

    extra = coverage.console(outcome.coverage)
    if extra:
        print()
        print("\n".join(textsafe.line(line) for line in extra))
    if outcome.fresh_seeds:
        print(f"fresh seeds: {', '.join(map(str, outcome.fresh_seeds))} "
              f"(reproduce: {evidence.fresh_reproduce(outcome)})")
    print()
    print(textsafe.line(evidence.judged_line(outcome)))
    for line in evidence.review_note(outcome):
        print(line)
    print(f"evidence: {where}")
