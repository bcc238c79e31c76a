"""``gate catalog import [PATHS]`` and ``gate catalog status``: adopt an existing suite as the oracle."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from mergegate import textsafe
from mergegate.errors import EXIT_NO, EXIT_OK, UsageError
from mergegate.git import blobs as git_blobs
from mergegate.git import core
from mergegate.pipeline import adopt, trial
from mergegate.records import catalog, fsutil, nodeids, repo
from mergegate.records.policy import ORACLE, Policy

MAX_FILE = 4 << 20  # a test file larger than this is not read (and said so)


def _needed(policy: Policy) -> Callable[[str], bool]:
    """The files whose bytes import, its trial and status read: the oracle and fixture trees, guarded
    ``conftest.py`` files and the catalog (production only by name)."""
    from mergegate.runner.specs import trusted_file

    prefix = policy.paths.catalog.rstrip("/") + "/"
    return lambda path: path.startswith(prefix) or policy.classify(path) == ORACLE or trusted_file(path, policy)


def work_tree_files(top: Path, policy: Policy) -> tuple[frozenset[str], dict[str, bytes]]:
    """Every tracked and untracked (not ignored) path of the work tree; the bytes of the regular files
    among them that import and status read."""
    paths = frozenset([e.path for e in git_blobs.ls_index(top) if not e.is_submodule] + core.untracked(top))
    needed = _needed(policy)
    files: dict[str, bytes] = {}
    for rel in sorted(p for p in paths if needed(p)):
        path = top / rel
        try:
            if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_FILE:
                continue
            files[rel] = path.read_bytes()
        except OSError:
            continue
    return paths, files


def rev_files(rev: str, top: Path, policy: Policy) -> tuple[frozenset[str], dict[str, bytes]]:
    entries = [e for e in git_blobs.ls_tree(rev, top) if not e.is_submodule]
    needed = _needed(policy)
    wanted = [e for e in entries if not e.is_symlink and needed(e.path)]
    blobs = dict(git_blobs.read_blobs((e.sha for e in wanted), top))
    return frozenset(e.path for e in entries), {e.path: blobs[e.sha] for e in wanted}


def catalog_of(files: dict[str, bytes], policy: Policy) -> catalog.Catalog:
    prefix = policy.paths.catalog.rstrip("/") + "/"
    return catalog.build({p: b for p, b in files.items() if p.startswith(prefix)}, prefix.rstrip("/"))


def _select(tests: list[nodeids.Test], paths: list[str], policy: Policy, top: Path) -> list[nodeids.Test]:
    if not paths:
        return tests
    wanted = []
    for raw in paths:
        rel = os.path.relpath(os.path.abspath(raw), top).replace(os.sep, "/")
        rel = "" if rel == "." else rel
        if rel.startswith("../"):
            raise UsageError(f"{raw}: outside the repository", "name paths inside the work tree")
        if rel and not rel.endswith(".py") and policy.classify(rel + "/x.py") != ORACLE:
            raise UsageError(f"{raw}: not under an oracle path", "check paths.oracle in gate.yaml")
        if rel.endswith(".py") and policy.classify(rel) != ORACLE:
            raise UsageError(f"{raw}: not an oracle path", "check paths.oracle in gate.yaml")
        wanted.append(rel)
    return [t for t in tests if any(not w or t.nodeid.file == w or t.nodeid.file.startswith(w.rstrip("/") + "/")
                                    for w in wanted)]


def run_import(args: argparse.Namespace) -> int:
    top = core.toplevel()
    policy = repo.load_policy(None, top)
    paths, files = work_tree_files(top, policy)
    cat = catalog_of(files, policy)
    tests = _select(adopt.oracle_tests(files, policy), args.paths, policy, top)
    cat_dir = policy.paths.catalog.rstrip("/")
    existing = frozenset(p for p in files if p.startswith(cat_dir + "/"))
    entries = adopt.plan_entries(cat, tests, files, paths, policy, existing)
    if not entries:
        print(f"every test under the oracle paths already has a catalog entry ({len(tests)} tests)")
        return EXIT_OK
    if args.dry_run:
        for new in entries:
            print(f"would add {new.path}  {new.test.nodeid}  ({_kind(new)})")
        return EXIT_OK
    for new in entries:
        if (top / new.path).exists():  # never overwrite (a file appeared since we listed)
            raise UsageError(f"{new.path} already exists", "rerun gate catalog import")
    outcomes = None if args.no_trial else _trial(top, entries, policy, paths, files, args.jobs)
    written, left, writes, lines = [], [], [], []
    for new in entries:
        outcome = outcomes[new.pid] if outcomes is not None else None
        if outcome is not None and outcome.how == trial.LEFT_OUT:
            left.append((new, outcome))
            continue
        text = new.text
        how = "untried" if outcome is None else outcome.how
        if outcome is not None and outcome.how == trial.SHARED:
            text = trial.shared_text(text, outcome)
            how = f"shared: fails sealed ({outcome.sealed_reason})"
        if outcome is not None and outcome.skips:
            text = trial.allow_skip_text(text, outcome)
            how = f"{how}; allow_skip: some of its tests skip here ({outcome.skips})"
        writes.append((top / new.path, text, 0o644))
        written.append(new)
        lines.append(textsafe.line(f"added {new.path}  {new.test.nodeid}  ({_kind(new)}, {how})"))
    fsutil.atomic_write_many(writes)
    if lines:
        print("\n".join(lines))
    for new, outcome in left:
        print(textsafe.line(f"left out  {new.test.nodeid}  ({_kind(new)}): fails sealed ({outcome.sealed_reason}) "
                            f"and in-process ({outcome.shared_reason})"))
    if left:
        print(f"{len(left)} {'test' if len(left) == 1 else 'tests'} left out: they fail on the work tree both ways, "
              "so as entries they would fail on both sides of every patch\n"
              "  fix: make each pass (gate test runs them in-process), then gate catalog import again")
    if not written:
        return EXIT_NO
    claimed = f"{cat_dir}/{catalog.CLAIMED_FILE}"
    if claimed in files:
        from mergegate.drafter.accept import claimed_text

        fsutil.atomic_write(top / claimed, claimed_text(files[claimed], [e.pid for e in written], claimed))
    tests_files = sorted({e.test.nodeid.file for e in written})
    add = " ".join(shlex.quote(p) for p in (cat_dir, *tests_files))
    noun = "entry" if len(written) == 1 else "entries"
    tried = "" if outcomes is None else (
        f" ({sum(1 for e in written if outcomes[e.pid].how == trial.SEALED)} sealed, "
        f"{sum(1 for e in written if outcomes[e.pid].how == trial.SHARED)} shared, as the trial on the work tree "
        "found)")
    print(f"{len(written)} {noun} written{tried}; review each claim, then commit them on their own (a person's "
          f"oracle-only commit re-signs the manifest):\n  git add -- {add} && "
          f"gate manifest sign --staged && git commit -m 'catalog: adopt {len(written)} tests'")
    return EXIT_OK


def _kind(new: adopt.NewEntry) -> str:
    return "plain test" if new.test.kind == nodeids.PLAIN else "hypothesis"


def _trial(top: Path, entries: list[adopt.NewEntry], policy: Policy, paths: frozenset[str],
           files: dict[str, bytes], jobs: int | None) -> dict[str, trial.Outcome]:
    """Each new entry run on the work tree (sealed, then in-process where that failed)."""
    noun = "entry" if len(entries) == 1 else "entries"
    print(f"trying {len(entries)} new {noun} on the work tree, sealed (and in-process where that fails); "
          "--no-trial skips this", file=sys.stderr)
    props = [(catalog.parse_entry(e.text, e.path), e.text) for e in entries]
    return trial.run_trial(top, props, policy, paths, files, jobs)


def run_status(args: argparse.Namespace) -> int:
    top = core.toplevel()
    if args.rev:
        rev = core.must_resolve(args.rev, top)
        policy = repo.load_policy(rev, top)
        _paths, files = rev_files(rev, top, policy)
    else:
        policy = repo.load_policy(None, top)
        _paths, files = work_tree_files(top, policy)
    cat = catalog_of(files, policy)
    tests = adopt.oracle_tests(files, policy)
    missing = adopt.status(cat, tests)
    gone = adopt.unresolved(cat, files, adopt.entry_line(files))
    for test in missing:
        print(f"no entry   {test.nodeid}  ({test.kind})")
    for problem in gone:
        print(f"gone       {problem}")
    print(f"{len(tests)} tests in the oracle tree, {len(cat.properties)} catalog entries: "
          f"{len(missing)} without an entry, {len(gone)} entries naming no test")
    if missing:
        print("  fix: gate catalog import   (writes an entry for each; review and commit them)")
    if gone:
        print("  fix: point each entry's oracle: at a test the file defines, or delete the entry")
    return EXIT_NO if missing or gone else EXIT_OK
