"""The trial of a catalog import: each new entry run on the work tree, sealed and, where that fails, in-process.

``gate catalog import`` writes an entry only once it knows how the entry runs on
the tree the maintainer is about to commit:

- it passes sealed: written as it is (``isolation: sealed``, the default);
- it fails sealed and passes in-process: written with ``isolation: shared`` and a
  comment saying why (the sealed run's reason, one line); a person may still
  rewrite the test so that it runs sealed;
- it fails both ways (a test that fails or skips here, or whose oracle cannot
  load at all): left out and listed with both reasons, so no entry the import
  writes can fail on both sides of every later patch (``uniform_fail``) or make
  every ``gate check`` exit 2 (an oracle that cannot load at the base);
- some of its tests skip here and the rest pass (a fixture's instance for a C
  extension not built here, a ``skipif`` for another platform): tried again with
  ``allow_skip: true`` and, when that passes, written so, with a comment saying
  which skip.  Sound because a test the base ran and the head skips is still a
  fail (``narrowed``, ``rules/differential.py``); an entry whose every test skips
  has no examples and stays left out.

The trial runs on the work tree as it is (production and oracle files), at the
policy's seeds, with the gate's own runner: what it reports is what ``gate run
--tree .`` would say of the new entries.  It never decides a verdict: it only
chooses how the entries are written, and the maintainer commits them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mergegate import textsafe
from mergegate.records import catalog
from mergegate.records.policy import Policy

if TYPE_CHECKING:
    from mergegate.runner.specs import Spec

SEALED, SHARED, LEFT_OUT = "sealed", "shared", "left out"
REASON_MAX = 160  # characters of a run's reason kept in the entry's comment and the listing


@dataclass(frozen=True)
class Outcome:
    """How one new entry ran on the work tree."""

    how: str  # SEALED | SHARED | LEFT_OUT
    sealed_reason: str = ""  # why it failed sealed ("" when it passed)
    shared_reason: str = ""  # why it failed in-process ("" when it passed or was not tried)
    skips: str = ""  # why some of its tests skip, when it passes only with ``allow_skip: true``


def decide(sealed_failures: Sequence[str], shared_failures: Sequence[str] | None, skips: str = "") -> Outcome:
    """The outcome from the failing rows' reasons (pure): empty means every row passed (``skips``: with
    ``allow_skip``, for that reason); ``shared_failures`` is None when the entry was not run in-process."""
    if not sealed_failures:
        return Outcome(SEALED, skips=skips)
    if shared_failures is not None and not shared_failures:
        return Outcome(SHARED, sealed_failures[0], skips=skips)
    return Outcome(LEFT_OUT, sealed_failures[0], (shared_failures or ["not run"])[0])


def reason_of(status: str, witness: str, error: str | None, load_error: bool) -> str:
    """One short line saying why a row did not pass."""
    what = "cannot load its oracle" if load_error else (status if not witness else f"{status} {witness}")
    detail = [line.strip() for line in (error or "").splitlines() if line.strip()]
    text = f"{what}: {detail[0]}" if detail else what
    return textsafe.line(text)[:REASON_MAX]


def shared_text(text: bytes, outcome: Outcome) -> bytes:
    """The entry with ``isolation: shared`` and the comment saying why (the comment is one line)."""
    why = outcome.sealed_reason.replace("\n", " ").replace("\r", " ")
    comment = f"# gate catalog import: fails sealed on the work tree ({why}); passes in-process"
    return text + (comment + "\nisolation: shared\n").encode()


def allow_skip_text(text: bytes, outcome: Outcome) -> bytes:
    """The entry with ``allow_skip: true`` and the comment saying which skip (one line)."""
    why = outcome.skips.replace("\n", " ").replace("\r", " ")
    comment = f"# gate catalog import: some of its tests skip on the work tree ({why}); the others pass"
    return text + (comment + "\nallow_skip: true\n").encode()


def _production_sources(top: Path, paths: frozenset[str], policy: Policy) -> dict[str, bytes]:
    """The work tree's production sources that mention a comparison (regular files; a link is not followed)."""
    from mergegate.runner import comparisons
    from mergegate.runner import specs as speclib

    out = {}
    for path in paths:
        where = top / path
        if speclib.is_production_source(path, policy) and not where.is_symlink() and where.is_file():
            data = where.read_bytes()
            if comparisons.mentions(data):
                out[path] = data
    return out


def run_trial(top: Path, entries: Sequence[tuple[catalog.Property, bytes]], policy: Policy,
              paths: frozenset[str], files: Mapping[str, bytes], jobs: int | None = None) -> dict[str, Outcome]:
    """Each entry's outcome (by id): sealed on the work tree at ``top``, then in-process for those that failed."""
    from mergegate.pipeline.progress import progress_bar
    from mergegate.runner import specs as speclib
    from mergegate.runner.schedule import plan, run_tasks
    from mergegate.runner.trees import tree_info

    trusted = speclib.Trusted(
        "work-tree",
        {p: b for p, b in files.items() if speclib.trusted_file(p, policy)},
        frozenset(speclib.production_names(paths, policy)),
        speclib.comparison_rows(_production_sources(top, paths, policy), paths, policy),
    )
    specs = []
    for prop, text in entries:
        source = trusted.files[prop.oracle_file]
        kind = speclib.check_function(prop, source, text)
        specs.append(speclib.Spec(prop, source, catalog.spec_hash(text, source), trusted, kind))
    tree = tree_info(top, policy, "work tree")
    seeds = policy.verdict.seeds

    def failures(chosen: list[speclib.Spec], at: Sequence[int]) -> dict[str, list[tuple[str, bool]]]:
        """Each entry's failing rows at the seeds ``at``: (reason, whether it failed only because a test skipped)."""
        with progress_bar() as progress:
            rows = run_tasks([(tree, spec, seed) for spec, seed in plan(chosen, at)], policy, jobs, progress)
        out: dict[str, list[tuple[str, bool]]] = {s.prop.id: [] for s in chosen}
        for row in rows:
            if row.status != "pass":
                out[row.prop].append((reason_of(row.status, row.witness, row.error, row.load_error),
                                      row.witness.startswith("Skipped:")))
        return out

    def attempt(chosen: list[speclib.Spec], at: Sequence[int] = seeds) -> Failing:
        """Failing reasons by entry; one that failed only by skips is tried again with ``allow_skip`` (its
        other tests must pass), and where that passes it has no failures and its skip reason is kept."""
        first = failures(chosen, at)
        skipping = [_with(s, allow_skip=True) for s in chosen
                    if first[s.prop.id] and all(skipped for _, skipped in first[s.prop.id])]
        again = failures(skipping, at) if skipping else {}
        skips = {pid: first[pid][0][0] for pid, rows in again.items() if not rows}
        return {pid: [] if pid in skips else [r for r, _ in rows] for pid, rows in first.items()}, skips

    sealed, sealed_skips = attempt(specs)
    retry = [_with(s, isolation="shared") for s in specs if sealed[s.prop.id]]
    shared, shared_skips = in_process(retry, seeds, attempt)
    return {s.prop.id: decide(sealed[s.prop.id], shared.get(s.prop.id),
                              sealed_skips.get(s.prop.id) or shared_skips.get(s.prop.id, "")) for s in specs}


Failing = tuple[dict[str, list[str]], dict[str, str]]  # failing reasons by entry; the skip reasons of those allowed
Attempt = Callable[[list["Spec"], Sequence[int]], Failing]


def in_process(retry: list[Spec], seeds: Sequence[int], attempt: Attempt) -> Failing:
    """The entries that failed sealed, run in-process: first at the first seed alone, then, only for a Hypothesis
    entry that passed there, at every seed.  An in-process run is a pytest session of its own (about 200 ms for
    natsort's files: its test file rewritten afresh); one that fails at the first seed is left out whatever its other
    seeds give (``decide``: it fails both ways), and a plain test runs at the first seed only in any case."""
    if not retry:
        return {}, {}
    first, first_skips = attempt(retry, seeds[:1])
    again = [s for s in retry if not first[s.prop.id] and s.seeds_apply] if len(seeds) > 1 else []
    if not again:
        return first, first_skips
    rest, rest_skips = attempt(again, seeds)
    kept = {pid: why for pid, why in first_skips.items() if pid not in rest}
    return {**first, **rest}, {**kept, **rest_skips}


def _with(spec: Spec, **change: Any) -> Spec:
    """``spec`` with its catalog entry changed (``isolation``, ``allow_skip``) for a run of the trial."""
    return dataclasses.replace(spec, prop=dataclasses.replace(spec.prop, **change))
