"""What one run of an entry ran, as the trusted side saw it: each item's outcome, and each decision to
drop an example or a step that production's answers could have made.

A row records both (``items``, ``decisions``) so the differential rule (``rules/differential.narrowed``)
can compare the head's run with the base's at the same seed: the trusted revision decides what is
tested, production only answers.

- ``items``: every collected item's node id and its outcome (passed, failed, skipped, xfailed), from
  pytest's own reports.  Which items exist (parametrize lists, fixture params) and which markers apply
  (skipif and xfail conditions) may be computed from production at collection: here they are seen.
- ``decisions``: per Hypothesis item, ``cases``: each generated test case's status in order (``v``
  valid, ``i`` invalid: an ``assume``, a ``.filter`` or a health-check filter rejected it, ``o``
  overrun, ``x`` failing), from Hypothesis's own statistics; ``steps``: each precondition answer of a
  state machine's rule selection in order (``1`` enabled, ``0`` not), ``|`` between two examples.  At
  one seed, the same answers give the same examples, so the first place where two runs differ is where
  production answered differently.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

CAP = 5000  # characters of one decision log a row keeps (the counts are kept whole)
LETTERS = {"valid": "v", "invalid": "i", "overrun": "o", "interesting": "x"}


def item_outcome(previous: str | None, report: Any) -> str:
    """An item's outcome after one more of its reports (setup, call, teardown)."""
    if report.failed or previous == "failed":
        return "failed"
    if report.skipped:
        return "xfailed" if hasattr(report, "wasxfail") else "skipped"
    return previous or "passed"


class Log:
    """One item's decision logs, capped; the counts of rejections whole."""

    def __init__(self) -> None:
        self.cases: list[str] = []
        self.steps: list[str] = []
        self.rejected = {"cases": 0, "steps": 0}

    def case(self, letter: str) -> None:
        self.rejected["cases"] += letter in "io"
        if len(self.cases) < CAP:
            self.cases.append(letter)

    def step(self, enabled: bool) -> None:
        self.rejected["steps"] += not enabled
        if len(self.steps) < CAP:
            self.steps.append("1" if enabled else "0")

    def example(self) -> None:
        """A new example of a state machine begins (its steps follow a ``|``; none before the first)."""
        if self.steps and len(self.steps) < CAP:
            self.steps.append("|")

    def to_json(self) -> dict[str, Any]:
        return {"cases": "".join(self.cases), "steps": "".join(self.steps), "rejected": dict(self.rejected)}


@contextlib.contextmanager
def cases(log: Log) -> Iterator[None]:
    """While inside, each Hypothesis run's generated test cases land in ``log`` (its own statistics)."""
    from hypothesis import statistics

    def note(stats: Any) -> None:
        for phase in ("reuse-phase", "generate-phase"):
            for case in (stats.get(phase) or {}).get("test-cases") or ():
                log.case(LETTERS.get(str(case.get("status")), "?"))

    collector: Any = statistics.collector  # typed for its default (None), not the callbacks it holds
    with collector.with_value(note):
        yield


def logged_machine(machine: type, log: Log) -> Any:
    """A factory of ``machine`` whose rule selection logs each precondition answer in ``log``.

    Hypothesis selects a rule with ``sampled_from(rules).filter(_rule_is_enabled)``, which asks the
    machine's rule strategy ``is_valid(rule)`` (bundles non-empty, every precondition true); the
    instance's own ``is_valid`` is wrapped, so nothing shared with another run changes.
    """

    def make() -> Any:
        log.example()
        instance = machine()
        strategy = instance._rules_strategy
        original = strategy.is_valid

        def is_valid(rule: Any) -> bool:
            answer = bool(original(rule))
            log.step(answer)
            return answer

        strategy.is_valid = is_valid
        return instance

    make.__name__ = machine.__name__
    make.__qualname__ = machine.__qualname__
    return make
