"""Running a plan: the trusted oracle tree on disk, one subject per tree, the evaluator pool, the rows.

Parent side.  For each run it materializes the trusted revision's oracle and
fixture files in a private directory (the evaluator's only view of them),
starts one subject per tree under test (contained: ``subject/sandbox.py``) and
feeds every property x seed to the evaluator pool.  Everything it started is
stopped when the run ends, also on an interrupt.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from mergegate.errors import InternalError, UsageError
from mergegate.records import catalog
from mergegate.records.policy import Policy
from mergegate.runner import rows as rowlib
from mergegate.runner import shared_box
from mergegate.runner import specs as speclib
from mergegate.runner.pool import Pool
from mergegate.runner.subject import bytecode, sandbox
from mergegate.runner.trees import Tree, files_matching, hidden_paths
from mergegate.runner.trusted import group, session

Task = tuple[Tree, speclib.Spec, int]
Progress = Callable[[Task, rowlib.Row], None]


def plan(specs: Sequence[speclib.Spec], seeds: Sequence[int],
         shard: tuple[int, int] | None = None) -> list[tuple[speclib.Spec, int]]:
    """Every property x seed in (prop, seed order); with ``shard=(k, n)`` only the k-th of n slices.

    A plain test (seeds do not apply) runs once, at the first seed; ``for_every_seed``
    copies its row to the others.
    """
    pairs = [(s, seed) for s in sorted(specs, key=lambda s: s.prop.id)
             for seed in (seeds if s.seeds_apply else seeds[:1])]
    if shard is None:
        return pairs
    k, n = shard
    return [pair for i, pair in enumerate(pairs) if i % n == k - 1]


def for_every_seed(rows: Sequence[rowlib.Row], specs: Sequence[speclib.Spec],
                   seeds: Sequence[int]) -> list[rowlib.Row]:
    """The rows with a plain test's one run copied to every seed (its result does not depend on one)."""
    plain = {s.prop.id for s in specs if not s.seeds_apply}
    out: list[rowlib.Row] = []
    for row in rows:
        out.append(row)
        if row.prop in plain and seeds and row.seed == seeds[0]:
            out.extend(rowlib.replaced(row, seed=seed) for seed in seeds[1:])
    return out


def parse_shard(text: str) -> tuple[int, int]:
    """``K/N`` with 1 <= K <= N."""
    try:
        k_text, n_text = text.split("/")
        k, n = int(k_text), int(n_text)
    except ValueError:
        raise UsageError(f"bad shard {text!r}", "write --shard K/N, e.g. --shard 1/4") from None
    if not 1 <= k <= n:
        raise UsageError(f"bad shard {text!r}: K must be between 1 and N", "write --shard 1/4 .. 4/4")
    return k, n


def default_jobs(policy: Policy) -> int:
    return policy.runner.jobs or len(os.sched_getaffinity(0)) or 1


# ---------------------------------------------------------------- the trusted oracle tree


def safe_relpath(path: str) -> bool:
    parts = path.split("/")
    return bool(path) and not path.startswith("/") and all(p not in ("", ".", "..", ".git") for p in parts)


def materialize(trusted: speclib.Trusted, dest: Path) -> Path:
    """Write the trusted oracle and fixture files under ``dest``, read-only."""
    dest.mkdir(parents=True)
    for path, data in sorted(trusted.files.items()):
        if not safe_relpath(path):
            continue
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(0o444)
    return dest


def import_root(root: Path, oracle_file: str, files: Sequence[str] | frozenset[str]) -> str:
    """The oracle file's import root, as pytest's "prepend" mode finds it (above its packages)."""
    directory = oracle_file.rpartition("/")[0]
    while directory and f"{directory}/__init__.py" in files:
        directory = directory.rpartition("/")[0]
    return str(root / directory) if directory else str(root)


# ---------------------------------------------------------------- running


def _containment(policy: Policy) -> str:
    """bwrap or none, per ``runner.containment``; said once when it falls back to none."""
    containment = sandbox.choose(policy.runner.containment)
    if containment == sandbox.NONE and policy.runner.containment != sandbox.NONE:
        print(f"gate: warning: {sandbox.probe()[2]}; production runs as a plain process group "
              "(rows say containment: none); fix: apt-get install bubblewrap", file=sys.stderr)
    return containment


@contextmanager
def _subjects(tasks: Sequence[Task], policy: Policy, scratch: Path,
              containment: str) -> Iterator[dict[Path, sandbox.Subject]]:
    """One subject per tree that has a sealed task; all stopped on the way out."""
    trees: dict[Path, Tree] = {}
    sources: dict[bytes, None] = {}  # each trusted file once, however many tasks share its revision
    names: set[str] = set()
    seen: set[int] = set()
    for tree, spec, _seed in tasks:
        if spec.prop.isolation == rowlib.SEALED:
            trees.setdefault(tree.root, tree)
            if id(spec.trusted) not in seen:
                seen.add(id(spec.trusted))
                names |= spec.trusted.production_names
                sources.update((data, None) for path, data in spec.trusted.files.items() if path.endswith(".py"))
    out: dict[Path, sandbox.Subject] = {}
    with ExitStack() as stack:
        if trees:
            preload = tuple(speclib.production_imports(sources, frozenset(names)))
            limits = sandbox.Limits(memory_bytes=policy.runner.memory_mb << 20,
                                    max_processes=policy.runner.max_processes,
                                    cpu_seconds=int(policy.runner.timeout_s) + 2)
            labels = [tree.label or f"tree{i}" for i, tree in enumerate(trees.values())]
            with ThreadPoolExecutor(len(trees)) as compilers:  # compiling is CPU work in subprocesses
                tops = sorted({name.partition(".")[0] for name in preload})
                pycaches = list(compilers.map(
                    lambda t, label: bytecode.prepare(str(t.root), t.prod_roots, scratch / f"pyc-{label}", tops),
                    trees.values(), labels))
            for tree, label, pycache in zip(trees.values(), labels, pycaches, strict=True):
                subject_spec = sandbox.SubjectSpec(str(tree.root), tree.prod_roots, hidden_paths(tree.root, policy),
                                                   preload, limits, None if pycache is None else str(pycache),
                                                   tuple(str(tree.root / rel) for rel in tree.trace))
                subject = sandbox.Subject(subject_spec, containment, scratch, label)
                stack.callback(subject.close)
                out[tree.root] = subject
        yield out


def run_tasks(tasks: Sequence[Task], policy: Policy, jobs: int | None = None,
              progress: Progress | None = None) -> list[rowlib.Row]:
    """Run every task in a pool of ``jobs`` evaluator zygotes; rows in task order."""
    if not tasks:
        return []
    size = max(1, min(jobs or default_jobs(policy), len(tasks)))
    begin = getattr(progress, "begin", None)  # a progress bar may want the total first
    if callable(begin):
        begin(len(tasks))
    with tempfile.TemporaryDirectory(prefix="gate-run-") as scratch_dir:
        scratch = Path(scratch_dir)
        (scratch / "pycache").mkdir()
        (scratch / "home").mkdir()
        (scratch / "pyc-trusted").mkdir()
        (scratch / "pytest.ini").write_text(session.INI)
        trusted_roots: dict[str, Path] = {}
        for _tree, spec, _seed in tasks:
            if spec.trusted.rev not in trusted_roots:
                trusted_roots[spec.trusted.rev] = materialize(spec.trusted, scratch / f"trusted{len(trusted_roots)}")
        closures = _closures(tasks)
        containment = _containment(policy)
        with _subjects(tasks, policy, scratch, containment) as subjects, ExitStack() as stack:
            pool = Pool(size, policy.runner.timeout_s, scratch)
            shared = _shared_pools(tasks, policy, scratch, trusted_roots, containment, stack, size)
            ex = ThreadPoolExecutor(size)
            rows: list[rowlib.Row | None] = [None] * len(tasks)

            def one(unit: list[int]) -> None:
                jobs = []
                for index in unit:
                    tree, spec, seed = tasks[index]
                    subject = subjects.get(tree.root)
                    if subject is not None and spec.prop.isolation == rowlib.SEALED:
                        subject.ensure_running()
                    jobs.append(_job(index, tree, spec, seed, policy, scratch, trusted_roots[spec.trusted.rev],
                                     subject, shared.get(tree.root) if spec.prop.isolation != rowlib.SEALED else None))
                runner = shared[tasks[unit[0]][0].root] if jobs[0]["isolation"] != rowlib.SEALED else pool
                by_id = {job["id"]: job for job in jobs}
                again: list[int] = []
                several = len(group.files(jobs)) > 1  # only a unit of several files is ever run again

                def done(out: dict[str, Any]) -> None:  # as each run's outcome arrives
                    index = out["id"]
                    if out.get("status") == group.REQUEUE and several:
                        again.append(index)  # its file is run again as a unit of its own (group.REQUEUE)
                        return
                    rows[index] = _row(tasks[index], by_id[index], out, policy, subjects, closures, containment)
                    if progress is not None:
                        progress(tasks[index], rows[index])

                try:
                    runner.submit_group(jobs, single=len(jobs) == 1, each=done)
                except InternalError as exc:
                    if runner.closed:
                        raise
                    # The zygote died under these jobs (e.g. the OOM killer): a crash, a fail; a fresh one serves on.
                    for job in jobs:
                        if rows[job["id"]] is None and job["id"] not in again:
                            done({"id": job["id"], "status": "fail", "witness": "Crash:runner", "error": exc.message})
                for rel in group.files([by_id[index] for index in again]):
                    one([index for index in again if by_id[index]["oracle_file"] == rel])

            try:
                futures = [ex.submit(one, unit) for unit in units(tasks, size)]
                for f in futures:
                    f.result()
                return [row for row in rows if row is not None]
            finally:
                # Kill the zygotes first (an interrupt must not wait for running properties),
                # then let the feeding threads finish against the closed pool.
                pool.close()
                for box in shared.values():
                    box.close()
                ex.shutdown(wait=True, cancel_futures=True)


GROUP_MAX = 64  # Hypothesis runs of one collection, at most (or GROUP_PLAIN times as many plain tests)
GROUP_PLAIN = 4  # plain tests that cost a unit what one Hypothesis run does (each is one example)


def units(tasks: Sequence[Task], jobs: int) -> list[list[int]]:
    """The tasks as units of work, largest first (the last to finish are short).

    Sealed runs of one tree and trusted revision are collected together, as one pytest session
    collects a suite (``trusted/group.py``): a unit's oracle files are collected once, file by file,
    at most ``GROUP_MAX`` Hypothesis runs to a unit, a plain test counting ``1 / GROUP_PLAIN`` of one
    (a file's runs next to each other, the units of a tree of even cost), and units are split further
    while there are fewer of them than evaluators.  Isolation ``shared`` runs, and node ids of one file
    that select each other's items, run alone.
    """
    groups: dict[tuple[Path, str], dict[str, list[int]]] = {}
    out: list[list[int]] = []
    for index, (tree, spec, _seed) in enumerate(tasks):
        if spec.prop.isolation == rowlib.SEALED:
            by_file = groups.setdefault((tree.root, spec.trusted.rev), {})
            by_file.setdefault(spec.prop.oracle_file, []).append(index)
        else:
            out.append([index])
    for by_file in groups.values():
        files = sorted(by_file.items())
        alone = {f for f, indices in files if group.overlapping(sorted({tasks[i][1].prop.oracle for i in indices}))}
        # As many units as the bound needs, of even cost: a side's last unit no smaller than the others, so the
        # base's and the head's units of the same files are not the two that run together at the end (each would
        # rewrite the files' asserts: the second to start reads the first's, ``forks.prepare``).
        limit = GROUP_MAX * GROUP_PLAIN
        total = sum(_cost(tasks[i]) for f, indices in files if f not in alone for i in indices)
        count = max(1, -(-total // limit))  # the units this group needs
        unit: list[int] = []
        cost = done = made = 0  # this unit's cost; the cost and number of the group's units before it
        for file, indices in files:
            if file in alone:
                out.extend([i] for i in indices)
                continue
            for i in indices:
                each = _cost(tasks[i])
                # A unit ends at its even share of the group (the next of ``count`` marks), or at the limit.
                if unit and (cost + each > limit or (done + cost + each) * count > (made + 1) * total):
                    out.append(unit)
                    done, made = done + cost, made + 1
                    unit, cost = [], 0
                unit.append(i)
                cost += each
        if unit:
            out.append(unit)
    def weight(unit: list[int]) -> int:
        return sum(_cost(tasks[i]) for i in unit)

    out.sort(key=weight, reverse=True)
    while len(out) < jobs and len(out[0]) > 1:
        largest = out.pop(0)
        half = (len(largest) + 1) // 2
        out.extend([largest[:half], largest[half:]])
        out.sort(key=weight, reverse=True)
    return out


def _cost(task: Task) -> int:
    """What a run costs a unit: a Hypothesis run GROUP_PLAIN, a plain test (one example) 1."""
    return GROUP_PLAIN if task[1].seeds_apply else 1


def _row(task: Task, job: dict[str, Any], out: dict[str, Any], policy: Policy,
         subjects: dict[Path, sandbox.Subject], closures: dict[tuple[Path, str], str], containment: str) -> rowlib.Row:
    tree, spec, seed = task
    subject = subjects.get(tree.root)
    if subject is not None and out.get("witness") == "Crash:subject":
        subject.settle()  # the next run must not meet a fork server that is still dying
    _explain_crash(out, Path(job["stderr"]), subject)
    return rowlib.make_row(
        spec.prop, seed, out, policy, spec_hash=spec.spec_hash, closure=closures[(tree.root, spec.prop.id)],
        fixture_digest=tree.fixture_digest, roots=[str(tree.root), job["trusted_root"]],
        isolation=job["isolation"],
        containment=containment if job["isolation"] != rowlib.SEALED else  # a shared run: its own sandbox
        subject.containment if subject else sandbox.NONE)


def _shared_pools(tasks: Sequence[Task], policy: Policy, scratch: Path, trusted_roots: dict[str, Path],
                  containment: str, stack: ExitStack, size: int) -> dict[Path, Pool]:
    """A sandboxed zygote per tree with shared runs (``shared_box``), closed on the way out."""
    trees = {tree.root: tree for tree, spec, _seed in tasks if spec.prop.isolation != rowlib.SEALED}
    out: dict[Path, Pool] = {}
    for i, (root, tree) in enumerate(trees.items()):
        out[root] = shared_box.make_pool(tree, tree.label or f"tree{i}", scratch, list(trusted_roots.values()),
                                         containment, policy.runner.timeout_s, size)
        stack.callback(out[root].close)
    return out


def _explain_crash(out: dict[str, Any], stderr: Path, subject: sandbox.Subject | None) -> None:
    """A crash or timeout row carries the end of the run's stderr, and of the subject's log."""
    text = str(out.get("error") or "")
    if out.get("witness") in ("Crash:runner", "Timeout:runner"):
        text += _tail("stderr", stderr.read_bytes() if stderr.exists() else b"")
    if subject is not None and out.get("witness") == "Crash:subject":
        text += _tail("subject log", subject.log_tail().encode())
    if text:
        out["error"] = text


def _tail(label: str, data: bytes, limit: int = 600) -> str:
    text = data[-limit:].decode(errors="replace").strip()
    return f"; {label}: {text}" if text else ""


def _closures(tasks: Sequence[Task]) -> dict[tuple[Path, str], str]:
    out: dict[tuple[Path, str], str] = {}
    for tree, spec, _seed in tasks:
        key = (tree.root, spec.prop.id)
        if key not in out:
            files = files_matching(tree.root, spec.prop.fixtures) if spec.prop.fixtures else {}
            out[key] = catalog.fixture_closure(spec.prop, files)
    return out


def _job(index: int, tree: Tree, spec: speclib.Spec, seed: int, policy: Policy, scratch: Path,
         trusted_root: Path, subject: sandbox.Subject | None, box: Pool | None = None) -> dict[str, Any]:
    oracle_root = import_root(trusted_root, spec.prop.oracle_file, frozenset(spec.trusted.files))
    sealed = spec.prop.isolation == rowlib.SEALED
    job: dict[str, Any] = {
        "id": index, "prop": spec.prop.id, "seed": seed, "isolation": spec.prop.isolation,
        "trusted_root": str(trusted_root), "oracle_file": spec.prop.oracle_file,
        "nodeid": spec.prop.oracle, "allow_skip": spec.prop.allow_skip,
        "source": spec.source.decode("utf-8", "surrogateescape"),
        "max_examples": spec.prop.max_examples, "oracle_root": oracle_root,
        "timeout": policy.runner.timeout_s, "pycache": str(scratch / "pycache"), "home": str(scratch / "home"),
        "stderr": str(scratch / f"stderr-{index}.log"), "cwd": str(trusted_root if sealed else tree.root),
    }
    if sealed:
        assert subject is not None
        job.update(subject_socket=subject.socket_path, production_names=sorted(spec.trusted.production_names),
                   ini=str(scratch / "pytest.ini"), comparisons=dict(spec.trusted.comparisons))
        if tree.trace:  # the run asks its subject which changed lines ran (``trusted/coverage.py``)
            job["coverage"] = str(tree.root)
        if subject.containment == sandbox.BUBBLEWRAP:  # production cannot reach the scratch folder
            job["trusted_pycache"] = str(scratch / "pyc-trusted")
    else:
        job.update(tree=str(tree.root), prod_roots=list(tree.prod_roots))
        if box is not None:  # what the shared run writes: its sandbox's own folder, nothing else
            job.update(pycache=str(box.scratch / "pycache"), home=str(box.scratch / "home"),
                       stderr=str(box.scratch / f"stderr-{index}.log"))
    return job
