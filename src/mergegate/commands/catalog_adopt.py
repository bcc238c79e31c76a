"""``gate catalog import [PATHS]`` and ``gate catalog status``: adopt an existing suite as the oracle."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from mergegate.errors import EXIT_NO, EXIT_OK, UsageError
from mergegate.git import blobs as git_blobs
from mergegate.git import core
from mergegate.pipeline import adopt, import_trial
from mergegate.records import catalog, fsutil, nodeids, repo
from mergegate.records.policy import ORACLE, Policy

MAX_FILE = 4 << 20  # a test file larger than this is not read (and said so)


def _needed(policy: Policy) -> Callable[[str], bool]:
    """The files whose bytes import and status read: the oracle tree and the catalog (production only by name)."""
    prefix = policy.paths.catalog.rstrip("/") + "/"
    return lambda path: path.startswith(prefix) or policy.classify(path) == ORACLE


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
    trials = {} if args.no_trial else _trials(entries, files, policy, top, args.jobs)
    written: dict[Path, bytes] = {}
    kept = []
    rev = trials_rev(top)
    for new in entries:
        trial = trials.get(new.pid, import_trial.Trial(new.pid, import_trial.UNTRIED, "--no-trial"))
        text = import_trial.as_written(new.text, trial, rev)
        if text is None:
            print(f"left out {new.test.nodeid}: fails on the adoption revision sealed and in-process "
                  f"({trial.why}); fix the test, then import it again")
            continue
        written[top / new.path] = text
        kept.append(new)
        print(f"added {new.path}  {new.test.nodeid}  ({_kind(new)}){_tried(trial)}")
    fsutil.atomic_write_new(written)
    entries = kept
    print(_trial_summary(list(trials.values()), len(kept)))
    if not entries:
        return EXIT_OK
    claimed = f"{cat_dir}/{catalog.CLAIMED_FILE}"
    if claimed in files:
        from mergegate.drafter.accept import claimed_text

        fsutil.atomic_write(top / claimed, claimed_text(files[claimed], [e.pid for e in entries], claimed))
    tests_files = sorted({e.test.nodeid.file for e in entries})
    add = " ".join(shlex.quote(p) for p in (cat_dir, *tests_files))
    noun = "entry" if len(entries) == 1 else "entries"
    print(f"{len(entries)} {noun} written; review each claim, then commit them on their own (a person's "
          f"oracle-only commit re-signs the manifest):\n  git add -- {add} && "
          f"gate manifest sign --staged && git commit -m 'catalog: adopt {len(entries)} tests'")
    return EXIT_OK


def _kind(new: adopt.NewEntry) -> str:
    return "plain test" if new.test.kind == nodeids.PLAIN else "hypothesis"


def _tried(trial: import_trial.Trial) -> str:
    if trial.outcome == import_trial.SHARED_ONLY:
        return f"  isolation: shared ({trial.why})"
    if trial.outcome == import_trial.UNTRIED:
        return f"  not tried ({trial.why})"
    return "  runs sealed"


def _trial_summary(trials: list[import_trial.Trial], written: int) -> str:
    count = {o: sum(t.outcome == o for t in trials) for o in
             (import_trial.SEALED_OK, import_trial.SHARED_ONLY, import_trial.FAILS, import_trial.UNTRIED)}
    untried = written - count[import_trial.SEALED_OK] - count[import_trial.SHARED_ONLY]
    return (f"tried on the adoption revision: {count[import_trial.SEALED_OK]} run sealed, "
            f"{count[import_trial.SHARED_ONLY]} only in-process (written isolation: shared, each says why), "
            f"{count[import_trial.FAILS]} fail both ways (left out), {untried} not tried")


def trials_rev(top: Path) -> str:
    return core.head(top) or ""


def _trials(entries: list[adopt.NewEntry], files: dict[str, bytes], policy: Policy, top: Path,
            jobs: int | None) -> dict[str, import_trial.Trial]:
    """Run each new entry sealed and in-process on HEAD (its test file as committed); the trials by id."""
    from mergegate.errors import ConfigError
    from mergegate.pipeline import diffrun
    from mergegate.runner.schedule import plan, run_tasks
    from mergegate.runner.specs import specs_at
    from mergegate.runner.trees import tree_info

    rev = trials_rev(top)
    if not rev:
        return {e.pid: import_trial.Trial(e.pid, import_trial.UNTRIED, "no commit to try it on") for e in entries}
    committed = git_blobs.files_at(rev, sorted({e.test.nodeid.file for e in entries}), top)
    out: dict[str, import_trial.Trial] = {}
    tryable = []
    for new in entries:
        if committed.get(new.test.nodeid.file) != files.get(new.test.nodeid.file):
            out[new.pid] = import_trial.Trial(new.pid, import_trial.UNTRIED,
                                              f"{new.test.nodeid.file} is not committed as it is here")
        else:
            tryable.append(new)
    specs = []
    for new in tryable:
        try:
            specs += specs_at(rev, policy, [catalog.parse_entry(new.text, new.path)], top, {new.path: new.text})
        except ConfigError as exc:
            out[new.pid] = import_trial.Trial(new.pid, import_trial.FAILS, str(exc))
    if specs:
        print(f"trying {len(specs)} entries on {rev[:12]}, sealed and in-process "
              f"(--no-trial skips this)...", file=sys.stderr, flush=True)
        with diffrun.worktrees([rev], top) as (tree_dir,):
            tree = tree_info(tree_dir, policy, "trusted")
            both = import_trial.both_modes(specs)
            rows = run_tasks([(tree, s, seed) for s, seed in plan(both, policy.verdict.seeds)], policy, jobs)
        for spec in specs:
            out[spec.prop.id] = import_trial.judge(spec.prop.id, rows)
    return out


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
