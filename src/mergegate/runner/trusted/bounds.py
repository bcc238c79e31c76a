"""The gate's bounds on a property's own Hypothesis settings, and the property rebuilt within them.

Used by every child that runs a property (sealed, grouped or shared): one rule for all.
"""

from __future__ import annotations

from typing import Any


def bounded_settings(settings: Any, own: Any, job: dict[str, Any]) -> Any:
    """The test's own settings within the gate's bounds.

    Honoured as the test sets them: health checks it suppresses, ``stateful_step_count``,
    a deadline it sets, its phases (generation always on, the explain phase off).
    Never the test's: the catalog's ``max_examples`` is a floor (a test may ask for more),
    the example database is off, the seed is the gate's (``derandomize`` off), one bug
    reported, no reproduction blob.  A setting the test leaves at Hypothesis's default
    is not "set": the gate's default (no deadline) applies.
    """
    from hypothesis import HealthCheck, Phase

    default = settings.get_profile("default")
    floor = int(job["max_examples"])
    examples = max(floor, own.max_examples) if own.max_examples != default.max_examples else floor
    deadline = own.deadline if own.deadline != default.deadline else None
    phases = tuple(p for p in Phase if p is not Phase.explain and (p in own.phases or p is Phase.generate))
    suppress = {*own.suppress_health_check, HealthCheck.too_slow, HealthCheck.differing_executors}
    return settings(
        own, max_examples=examples, database=None, derandomize=False, deadline=deadline,
        report_multiple_bugs=False, print_blob=False, phases=phases,
        suppress_health_check=sorted(suppress, key=lambda h: h.value),
    )


def rebuild(counted: Any, handle: Any, fn: Any, job: dict[str, Any], given: Any, settings: Any, seed: Any,
            parent: Any) -> Any:
    """The property again, from its real ``@given`` handle, around ``counted`` (its body behind a counter),
    with its explicit examples, ``parent`` (its own settings) within the gate's bounds and the job's seed."""
    import inspect

    del counted.__wrapped__
    # ``@given`` above ``@settings``: the body carries the settings' marks (copied by functools.wraps);
    # the settings themselves are ``parent``, applied once below, so the marks go.
    for mark in ("_hypothesis_internal_settings_applied", "_hypothesis_internal_use_settings"):
        counted.__dict__.pop(mark, None)
    counted.__signature__ = inspect.signature(handle.inner_test)
    test = given(**handle._given_kwargs)(counted)
    explicit = getattr(fn, "hypothesis_explicit_examples", None)
    if explicit:
        test.hypothesis_explicit_examples = list(explicit)
    return seed(int(job["seed"]))(bounded_settings(settings, parent, job)(test))
