"""``gate demo``: build the bundled shop repository and put every scenario through ``gate check``."""

from __future__ import annotations

import argparse
import re
import shutil
import tempfile
import time
from pathlib import Path

from mergegate.errors import EXIT_NO, EXIT_OK, InternalError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--keep", metavar="DIR", help="build the demo repository in DIR and keep it")
    parser.add_argument("--only", metavar="TEXT", help="run only scenarios whose name contains TEXT")
    parser.add_argument("-j", "--jobs", type=int, help="processes in parallel (default: one per core)")


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="gate-demo-"))
    try:
        return _run(root, args, started)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


def _run(root: Path, args: argparse.Namespace, started: float) -> int:
    from mergegate.demo import build, scenarios

    repo_dir = build.build(root)
    print(f"demo repository: {repo_dir}" + ("" if args.keep else " (removed afterwards)"))
    print(f"{'scenario':<44} {'expected':<24} {'actual':<24} ok")
    wrong = 0
    for sc in scenarios.scenarios(repo_dir):
        if args.only and args.only not in sc.name:
            continue
        actual, reason, detail = play(repo_dir, sc, args.jobs)
        ok = (actual, reason) == (sc.expected, sc.reason)
        wrong += not ok
        print(f"{sc.name:<44} {sc.expected + '/' + sc.reason:<24} {actual + '/' + reason:<24} "
              f"{'yes' if ok else 'NO'}")
        if detail:
            print(f"    {detail}")
    print(f"{'all scenarios matched' if not wrong else f'{wrong} scenario(s) differ'} "
          f"in {time.monotonic() - started:.1f}s")
    return EXIT_NO if wrong else EXIT_OK


def play(repo_dir: Path, sc: object, jobs: int | None) -> tuple[str, str, str]:
    """Commit the scenario on a branch from its base, run the pipeline, return (decision, reason, detail)."""
    from mergegate.demo import build
    from mergegate.demo.scenarios import Scenario
    from mergegate.pipeline import check, evidence

    assert isinstance(sc, Scenario)
    branch = "scenario/" + re.sub(r"[^a-z0-9]+", "-", sc.name.lower()).strip("-")
    build.git(repo_dir, "checkout", "-q", "-b", branch, sc.base)
    try:
        files = dict(sc.files)
        if sc.edit == "ledger":
            text = (repo_dir / "freeze_ledger.yaml").read_text()
            extended = re.sub(r"expires_at: (['\"]?)(\d{4})", lambda m: f"expires_at: {m[1]}{int(m[2]) + 1}", text)
            if extended == text:
                raise InternalError("demo: the ledger has no expiry to extend")
            files["freeze_ledger.yaml"] = extended
        build.commit(repo_dir, files, f"scenario: {sc.name}", agent=sc.agent, sign=sc.sign)
        outcome = check.check(sc.base, "HEAD", environ={}, jobs=jobs, cwd=repo_dir)
        evidence.write_packet(outcome, repo_dir.parent / "evidence" / branch.replace("/", "-"))
    finally:
        build.git(repo_dir, "checkout", "-q", "main")
    if not outcome.verdicts:
        return outcome.decision, outcome.reason, ", ".join(evidence.reason_codes(outcome)[1:])
    notes = []
    for prop, verdict, reason, detail in evidence.prop_rows(outcome):
        if reason != "both_pass":
            first = detail.split("; ")[0] if detail and not detail.startswith(("Assertion", "Oracle")) else ""
            notes.append(f"{prop} {verdict}/{reason}" + (f" ({first})" if first else ""))
    return outcome.decision, outcome.reason, "; ".join(notes)
