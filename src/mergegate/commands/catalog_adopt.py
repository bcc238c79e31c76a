"""``gate catalog import [PATHS]`` and ``gate catalog status``: adopt an existing suite as the oracle."""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Callable
from pathlib import Path

from mergegate.errors import EXIT_NO, EXIT_OK, UsageError
from mergegate.git import blobs as git_blobs
from mergegate.git import core
from mergegate.pipeline import adopt
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
    for new in entries:
        kind = "plain test" if new.test.kind == nodeids.PLAIN else "hypothesis"
        print(f"{'would add' if args.dry_run else 'added'} {new.path}  {new.test.nodeid}  ({kind})")
    if not entries:
        print(f"every test under the oracle paths already has a catalog entry ({len(tests)} tests)")
        return EXIT_OK
    if args.dry_run:
        return EXIT_OK
    for new in entries:
        if (top / new.path).exists():  # never overwrite (a file appeared since we listed)
            raise UsageError(f"{new.path} already exists", "rerun gate catalog import")
    for new in entries:
        fsutil.atomic_write(top / new.path, new.text, mode=0o644)
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
