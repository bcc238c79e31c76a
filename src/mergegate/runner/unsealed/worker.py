"""The shared-process child: the property and production in one process, behind in-process guards.

Runs in a child forked by the evaluator's zygote, for a property whose catalog
entry says ``isolation: shared``.  The oracle's own non-production imports load
and are snapshotted first; then production roots join ``sys.path`` and the
trusted oracle source runs; anything production changed in Hypothesis, the
builtins or a preloaded module, or a tracer, is a fail (``OracleTampered``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import sys
from typing import Any

from mergegate.runner.trusted import report
from mergegate.runner.unsealed import guard as g


def run_shared(job: dict[str, Any], snap: dict[str, Any], builtins_before: dict[str, Any],
               result: dict[str, Any]) -> dict[str, Any]:
    import hypothesis
    from hypothesis.core import HypothesisHandle

    from mergegate.runner.trusted import evaluator

    # Locals only from here on: production code may rebind module globals.
    check, tamper, site, cex = g.tampered, _tamper, report.assertion_site, report.counterexample
    given, settings, seed_ = hypothesis.given, hypothesis.settings, hypothesis.seed
    pristine = settings.get_profile("default")
    rebuild = evaluator.rebuild
    source: bytes = job["source"].encode("utf-8", "surrogateescape")
    oracle_path = os.path.join(job["trusted_root"], job["oracle_file"])
    rel = job["oracle_file"]
    sys.path.insert(0, job["oracle_root"])  # the trusted oracle tree: helpers load before production
    for name in g.oracle_imports(source, job["prod_roots"]):
        # A missing module is reported by the oracle's own import, in the oracle's words.
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    snap = {**snap, **g.snapshot([n for n in sys.modules if n not in snap])}
    consts = g.scalars(list(sys.modules))
    moved_const = g.scalars_moved
    builtins_before = dict(builtins_before)
    code_before = {f: (f.__code__, f.__defaults__)
                   for f in (g.tampered, _tamper, report.assertion_site, report.counterexample, g.scalars_moved)}
    result["opened"] = evaluator.watch_opens(job["trusted_root"])
    sys.path[1:1] = job["prod_roots"]  # after the oracle's directory: production never shadows a helper
    module = evaluator.oracle_module(job, oracle_path)
    try:
        exec(compile(source, oracle_path, "exec", dont_inherit=True), vars(module))
    except BaseException as exc:
        return {"status": "fail", "witness": site(exc, oracle_path, rel),
                "error": f"loading the oracle: {type(exc).__name__}: {exc}"[:2000]}
    moved = check(snap, builtins_before) or moved_const(consts)
    if moved is not None:
        return tamper(moved, rel)
    fn = vars(module).get(job["function"])
    handle = getattr(fn, "__dict__", {}).get("hypothesis")
    if type(handle) is not HypothesisHandle:
        return evaluator.not_a_property(job, rel)
    inner = handle.inner_test
    if getattr(getattr(inner, "__code__", None), "co_filename", None) != oracle_path:
        return tamper("the test body (not defined in the oracle file)", rel)
    counter = [0]
    trace_seen: list[str] = []
    gettrace = sys.gettrace

    @functools.wraps(inner)
    def counted(*args: Any, **kwargs: Any) -> Any:
        try:
            out = inner(*args, **kwargs)
        finally:
            if gettrace() is not None:
                trace_seen.append("sys.settrace")
        counter[0] += 1  # examples that completed, not calls
        return out

    own = getattr(fn, "_hypothesis_internal_use_settings", None)
    test = rebuild(counted, handle, fn, job, given, settings, seed_, own if isinstance(own, settings) else pristine)
    failure: BaseException | None = None
    try:
        test()
    except BaseException as exc:
        failure = exc
    result["examples"] = counter[0]
    for f, (c, d) in code_before.items():
        if f.__code__ is not c or f.__defaults__ is not d:
            return tamper(f"the runner's {f.__name__}", rel)
    moved = check(snap, builtins_before) or moved_const(consts) or (trace_seen[0] if trace_seen else None)
    if moved is not None:
        return tamper(moved, rel)
    return evaluator.verdict(failure, counter[0], oracle_path, rel, site, cex)


def _tamper(what: str, rel: str) -> dict[str, Any]:
    return {"status": "fail", "witness": f"OracleTampered:{rel}",
            "error": f"production code changed {what} while the property was loading or running"}


PRELOAD = (
    "math", "cmath", "decimal", "fractions", "numbers", "statistics", "json", "re",
    "collections", "functools", "itertools", "operator", "datetime", "random", "string",
    "typing", "pathlib", "unittest", "dataclasses", "enum", "copy", "io", "struct", "ctypes",
    "hypothesis", "hypothesis.strategies", "hypothesis.core", "hypothesis.control",
    "hypothesis.errors", "hypothesis.configuration",
)


def zygote_state() -> tuple[dict[str, Any], dict[str, Any]]:
    """Preload the standard modules oracles lean on; snapshot them and the builtins (in the zygote)."""
    import builtins

    for name in PRELOAD:
        importlib.import_module(name)
    return g.snapshot(list(sys.modules)), dict(vars(builtins))

