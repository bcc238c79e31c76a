"""The shared-process child: the property and production in one process, behind in-process guards.

Runs in a child forked by the evaluator's zygote, for a property whose catalog
entry says ``isolation: shared``.  The oracle's own non-production imports load
and are snapshotted first; then production roots join ``sys.path`` and the
trusted oracle source runs; anything production changed in Hypothesis, the
builtins or a preloaded module, or a tracer, is a fail (``OracleTampered``).
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from typing import Any

from mergegate.runner.unsealed import guard as g


def run_shared(job: dict[str, Any], snap: dict[str, Any], builtins_before: dict[str, Any],
               result: dict[str, Any]) -> dict[str, Any]:
    """Run one node id x seed as the same pytest session a sealed child runs, production in-process."""
    from mergegate.runner.trusted import forks, session

    # Locals only from here on: production code may rebind module globals.
    check, tamper, moved_const, run = g.tampered, _tamper, g.scalars_moved, session.run
    source: bytes = job["source"].encode("utf-8", "surrogateescape")
    rel = job["oracle_file"]
    sys.path.insert(0, job["oracle_root"])  # the trusted oracle tree: helpers load before production
    for name in g.oracle_imports(source, job["prod_roots"]):
        # A missing module is reported by the oracle's own import, in the oracle's words.
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    snap = {**snap, **g.snapshot([n for n in sys.modules if n not in snap])}
    consts = g.scalars(list(sys.modules))
    builtins_before = dict(builtins_before)
    code_before = {f: (f.__code__, f.__defaults__)
                   for f in (g.tampered, _tamper, g.scalars_moved, session.run, session.GatePlugin.outcome,
                             session.GatePlugin._run, session.GatePlugin._counted, session.finish,
                             forks.report)}
    result["opened"] = forks.watch_opens(job["trusted_root"])
    sys.path[1:1] = job["prod_roots"]  # after the oracle's directory: production never shadows a helper
    outcome = run(job, None, result)
    for f, (c, d) in code_before.items():
        if f.__code__ is not c or f.__defaults__ is not d:
            return tamper(f"the runner's {f.__name__}", rel)
    moved = check(snap, builtins_before) or moved_const(consts) or outcome.pop("tampered", None)
    if moved is not None:
        return tamper(moved, rel)
    return outcome


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

