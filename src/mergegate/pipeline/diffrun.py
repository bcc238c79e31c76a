"""The differential run (seed 003): base and head side by side under one contract.

Each revision is checked out in its own ``git worktree add --detach`` tree in a
private temporary directory; both trees' jobs share one runner pool, so the two
runs overlap on the cores.  The worktrees are removed afterwards, also when the
run is interrupted (Ctrl-C, SIGTERM): handlers turn SIGTERM into
KeyboardInterrupt so the ``finally`` blocks run, then ``git worktree prune``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import re
import shutil
import signal
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from mergegate.git import blobs as git_blobs
from mergegate.git import core
from mergegate.records import catalog, fsutil, runs
from mergegate.records.policy import Policy
from mergegate.rules import globs
from mergegate.runner.rows import Row, row_from_json
from mergegate.runner.schedule import Progress, Task, for_every_seed, plan, run_tasks
from mergegate.runner.specs import Spec
from mergegate.runner.trees import Tree, files_matching, literal_prefix, tree_info

CONTRACT_VERSION = 1


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM (and SIGHUP) raise KeyboardInterrupt in the main thread while inside."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    saved = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError):  # not the main thread: leave handlers alone
            saved[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in saved.items():
            signal.signal(sig, old)


@contextlib.contextmanager
def worktrees(revs: Sequence[str], cwd: str | Path | None = None, omit: Sequence[str] = ()) -> Iterator[list[Path]]:
    """Detached worktrees of ``revs`` in a private temp dir; always removed and pruned.

    ``omit``: folders not checked out (``core.worktree_add``).
    """
    sweep_worktrees(cwd)
    scratch = Path(tempfile.mkdtemp(prefix=f"gate-wt-{os.getpid()}-"))
    made: list[Path] = []
    try:
        with interruptible():
            # One after the other: ``git worktree add`` reads every worktree's admin folder, and one
            # being made beside it is half written ("failed to read .git/worktrees/tree0/commondir").
            for i, rev in enumerate(revs):
                path = scratch / f"tree{i}"
                made.append(path)
                core.worktree_add(path, rev, cwd, omit)
            yield made
    finally:
        # Ignore a second Ctrl-C while cleaning up: leaving worktrees behind is worse.
        old = signal.getsignal(signal.SIGINT)
        with contextlib.suppress(ValueError):
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            for path in made:
                core.worktree_remove(path, cwd)
            shutil.rmtree(scratch, ignore_errors=True)
            core.run(["worktree", "prune"], cwd, check=False)
        finally:
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(signal.SIGINT, old)


_SCRATCH = re.compile(r"gate-wt-(\d+)-[^/]+")


def sweep_worktrees(cwd: str | Path | None = None) -> None:
    """Remove the worktrees and scratch folders of runs that were killed (their process is gone)."""
    listing = core.run(["worktree", "list", "--porcelain", "-z"], cwd, check=False).stdout
    for record in listing.split(b"\0"):
        if not record.startswith(b"worktree "):
            continue
        path = Path(os.fsdecode(record[len(b"worktree "):]))
        match = _SCRATCH.fullmatch(path.parent.name)
        if match and not fsutil.pid_alive(int(match.group(1))):
            core.worktree_remove(path, cwd)
    for scratch in Path(tempfile.gettempdir()).glob("gate-wt-*-*"):
        match = _SCRATCH.fullmatch(scratch.name)
        if match and not fsutil.pid_alive(int(match.group(1))) and not any(scratch.glob("tree*/.git")):
            shutil.rmtree(scratch, ignore_errors=True)


def side_spec_hashes(rev: str, cat: catalog.Catalog, cwd: str | Path | None = None) -> dict[str, str]:
    """Each property's spec hash from ``rev``'s own bytes (catalog entry + oracle file)."""
    entries = {e.path: e for e in git_blobs.ls_tree(rev, cwd) if not e.is_submodule}
    paths = {p for prop in cat.properties for p in (prop.source, prop.oracle_file)}
    blobs = dict(git_blobs.read_blobs((entries[p].sha for p in paths if p in entries), cwd))

    def data(path: str) -> bytes | None:
        entry = entries.get(path)
        return blobs[entry.sha] if entry is not None else None

    return {p.id: catalog.spec_hash(data(p.source), data(p.oracle_file)) for p in cat.properties}


def closures(tree: Tree, cat: catalog.Catalog) -> dict[str, str]:
    out = {}
    for prop in cat.properties:
        files = files_matching(tree.root, prop.fixtures) if prop.fixtures else {}
        out[prop.id] = catalog.fixture_closure(prop, files)
    return out


@dataclass(frozen=True)
class Pair:
    """Both runs and the contract they were made under."""

    contract: dict[str, Any]
    base_rows: tuple[Row, ...]
    head_rows: tuple[Row, ...]
    skipped: tuple[str, ...]  # properties not run on the head (oracle edited)

    @property
    def contract_hash(self) -> str:
        return contract_hash(self.contract)

    @functools.cached_property
    def rows_of(self) -> dict[str, tuple[list[Row], list[Row]]]:
        """Each property's rows, (base, head), in run order: one pass, not one per property."""
        out: dict[str, tuple[list[Row], list[Row]]] = {}
        for side, rows in enumerate((self.base_rows, self.head_rows)):
            for r in rows:
                out.setdefault(r.prop, ([], []))[side].append(r)
        return out


def contract_hash(contract: dict[str, Any]) -> str:
    """sha256 of the contract's canonical JSON."""
    return hashlib.sha256(canonical(contract)).hexdigest()


def canonical(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


def run_pair(
    base: str, head: str, policy: Policy, cat: catalog.Catalog, specs: Sequence[Spec],
    seeds: Sequence[int], *, skip_head: Sequence[str] = (), jobs: int | None = None,
    progress: Progress | None = None, cwd: str | Path | None = None, fresh: Sequence[int] = (),
    trace: Sequence[str] = (),
) -> Pair:
    """Run every spec on ``base`` and every spec not in ``skip_head`` on ``head``, side by side.

    ``fresh``: this check's fresh seeds, run on both sides after the policy's ``seeds``.
    ``trace``: the head's changed production files (relative paths) whose executed lines
    the head's runs record (``coverage``).
    """
    schedule = [*seeds, *fresh]
    with worktrees([base, head], cwd, omit=[policy.paths.catalog]) as (base_dir, head_dir):
        base_tree = tree_info(base_dir, policy, "base")
        head_tree = dataclasses.replace(tree_info(head_dir, policy, "head"), trace=tuple(trace))
        contract = make_contract(base, head, seeds, cat, base_tree, head_tree, cwd)
        contract["fresh_seeds"] = list(fresh)
        skip = set(skip_head)
        tasks: list[Task] = []
        for spec, seed in plan(specs, schedule):
            tasks.append((base_tree, spec, seed))
            if spec.prop.id not in skip:
                tasks.append((head_tree, spec, seed))
        rows = run_tasks(tasks, policy, jobs, progress)
    base_rows = tuple(bind(with_reproduce(for_every_seed(
        [r for (tree, _s, _seed), r in zip(tasks, rows, strict=True) if tree is base_tree], specs, schedule),
        rev=base), base, cwd))
    head_rows = tuple(bind(with_reproduce(for_every_seed(
        [r for (tree, _s, _seed), r in zip(tasks, rows, strict=True) if tree is head_tree], specs, schedule),
        rev=head, trusted=base), head, cwd))
    contract["seeds_apply"] = {s.prop.id: s.seeds_apply for s in specs}
    return Pair(contract, base_rows, head_rows, tuple(sorted(skip)))


def bind(rows: Sequence[Row], rev: str, cwd: str | Path | None = None) -> list[Row]:
    """The rows, each naming the commit ``rev`` and its tree (what a run file is accepted for)."""
    from mergegate.pipeline import judged
    from mergegate.runner import rows as rowlib

    return rowlib.bound(rows, rev, judged.tree_of(rev, cwd))


def with_reproduce(rows: Sequence[Row], *, rev: str, trusted: str | None = None) -> list[Row]:
    from mergegate.runner import rows as rowlib

    return rowlib.with_reproduce(rows, rev=rev, trusted=trusted)


def make_contract(base: str, head: str, seeds: Sequence[int], cat: catalog.Catalog,
                  base_tree: Tree, head_tree: Tree, cwd: str | Path | None) -> dict[str, Any]:
    """contract.json: revisions, per-side spec and fixture closure hashes, fixture digests, seeds."""
    return {
        "contract_version": CONTRACT_VERSION,
        "base": base,
        "head": head,
        "seeds": list(seeds),
        "properties": [{"id": p.id, "oracle": p.oracle, "claim": p.claim} for p in cat.properties],
        "spec_hash": {"base": side_spec_hashes(base, cat, cwd), "head": side_spec_hashes(head, cat, cwd)},
        "fixture_closure_hash": {"base": closures(base_tree, cat), "head": closures(head_tree, cat)},
        "fixture_digest": {"base": base_tree.fixture_digest, "head": head_tree.fixture_digest},
    }


# ---------------------------------------------------------------- rows made elsewhere (CI shards)


def blob_tree(rev: str, policy: Policy, cat: catalog.Catalog, cwd: str | Path | None) -> tuple[str, dict[str, str]]:
    """Fixture digest and per-property closure hashes of ``rev``, from git blobs (no checkout)."""
    from mergegate.records import digest

    roots = sorted({literal_prefix(p) for p in policy.paths.fixtures})
    patterns = [*policy.paths.fixtures, *(f for p in cat.properties for f in p.fixtures)]
    entries = [e for e in git_blobs.ls_tree(rev, cwd) if not e.is_submodule and (
        any(e.path.startswith(r.rstrip("/") + "/") for r in roots) or globs.matches(e.path, patterns))]
    blobs = dict(git_blobs.read_blobs((e.sha for e in entries), cwd))
    files = {e.path: blobs[e.sha] for e in entries}

    def under(root: str) -> str:
        prefix = root.rstrip("/") + "/"
        return digest.fixture_digest_of({p[len(prefix):]: b for p, b in files.items() if p.startswith(prefix)})

    fixture_digest = under(roots[0]) if len(roots) == 1 else digest.fixture_digest_of(
        {r: under(r).encode() for r in roots})
    return fixture_digest, {p.id: catalog.fixture_closure(p, files) for p in cat.properties}


def load_rows(path: str | Path, seeds: Sequence[int], tree: str | None = None, side: str = "",
              rev: str = "") -> list[Row]:
    """A JSONL run file (``gate run``/``gate merge-runs``) as rows; validated line by line.

    ``tree``: every row must name it (the tree judged on ``side``, the commit ``rev``):
    rows of another revision (the base's offered as the head's, an earlier commit's)
    are refused, naming the file and line.
    """

    runs.load_jsonl(path, seeds)  # names file:line of any malformed row
    from mergegate.errors import ConfigError
    from mergegate.records import jsonio

    rows = []
    for number, line in jsonio.lines(Path(path).read_text(encoding="utf-8")):
        if not line.strip():
            continue
        try:
            row = row_from_json(jsonio.loads(line, str(path), number))
        except (TypeError, ValueError, OverflowError) as exc:
            raise ConfigError(str(path), number, f"bad run row ({exc})", "use the rows a run wrote") from None
        if tree is not None and row.tree != tree:
            ran = f"ran on tree {row.tree[:12]} (revision {row.revision[:12] or '?'})" if row.tree else \
                "names no tree (a directory run, or an old run file)"
            raise ConfigError(str(path), number, f"{row.prop} seed {row.seed} {ran}, not on the {side} "
                              f"judged here (tree {tree[:12]}, revision {rev[:12]})",
                              f"pass the merged rows of `gate run --rev {rev[:12]}` for the {side}")
        rows.append(row)
    return rows


def pair_from_rows(
    base: str, head: str, policy: Policy, cat: catalog.Catalog, specs: Sequence[Spec],
    seeds: Sequence[int], base_rows: Sequence[Row], head_rows: Sequence[Row], *,
    skip_head: Sequence[str] = (), cwd: str | Path | None = None, fresh: Sequence[int] = (),
) -> Pair:
    """A Pair from rows run elsewhere, under a contract computed here from the revisions.

    ``fresh``: the fresh seeds the runs drew (after ``seeds``); rows of any other seed are dropped.

    A row that cites another contract (a spec hash other than the trusted one, a
    fixture digest other than its revision's, an unknown property) is dropped, so
    the property is missing that seed: a missing run is a fail.
    """
    base_digest, base_closures = blob_tree(base, policy, cat, cwd)
    head_digest, head_closures = blob_tree(head, policy, cat, cwd)
    trusted = {s.prop.id: s.spec_hash for s in specs}
    contract = {
        "contract_version": CONTRACT_VERSION, "base": base, "head": head, "seeds": list(seeds),
        "properties": [{"id": p.id, "oracle": p.oracle, "claim": p.claim} for p in cat.properties],
        "spec_hash": {"base": side_spec_hashes(base, cat, cwd), "head": side_spec_hashes(head, cat, cwd)},
        "fixture_closure_hash": {"base": base_closures, "head": head_closures},
        "fixture_digest": {"base": base_digest, "head": head_digest},
        "rows_from": "external run files",
        "fresh_seeds": list(fresh),  # drawn for this check by the job that started the shards
        "seeds_apply": {s.prop.id: s.seeds_apply for s in specs},
    }

    schedule = {*seeds, *fresh}

    def keep(rows: Sequence[Row], digest_: str, skip: set[str]) -> tuple[Row, ...]:
        return tuple(r for r in rows if r.prop in trusted and r.prop not in skip and r.seed in schedule
                     and r.spec_hash == trusted[r.prop] and r.fixture_digest == digest_)

    kept_base = keep(base_rows, base_digest, set())
    kept_head = keep(head_rows, head_digest, set(skip_head))
    contract["rows_dropped"] = {"base": len(base_rows) - len(kept_base),
                                "head": len(head_rows) - len(kept_head)}
    return Pair(contract, kept_base, kept_head, tuple(sorted(skip_head)))
