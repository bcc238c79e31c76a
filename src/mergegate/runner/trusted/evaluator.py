"""The trusted evaluator: a fork server (zygote) and one child per property x seed.

Started by ``runner.pool`` as ``python -s -S -P evaluator.py SITE...`` with a
scrubbed environment: no ``sitecustomize``, ``.pth`` file, user site,
``conftest.py`` or pytest configuration of the repository is loaded.  The
zygote imports Hypothesis once and forks a fresh child per job.

A sealed child (the default) never imports production code.  Its ``sys.path``
holds the standard library, the gate's own environment and the trusted oracle
tree (materialized from the trusted revision's blobs); the stand-in finder
(``trusted.standins``) answers every production name by asking that side's
subject over the call protocol.  Hypothesis's engine, the property body, its
helpers, the fixtures, the example counter and the result live here only: a
patch changes production code, and production code is in another process.

Protocol with the parent (zygote stdin/stdout): one JSON job per line in, one
JSON outcome per line out.  The child reports to the zygote on its own pipe
with one length-prefixed JSON message.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from typing import Any

# ---------------------------------------------------------------- the sealed child


def run_sealed(job: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """Run one node id x seed as a pytest session with production behind stand-ins; return the outcome."""
    from mergegate.runner.trusted import session, standins

    return session.run(job, standins.seal(job, result), result)


# ---------------------------------------------------------------- the child process


def child(job: dict[str, Any], state: tuple[dict[str, Any], dict[str, Any]], wfd: int) -> None:
    """Run one job; write one message to ``wfd``; never return."""
    from mergegate.runner.trusted import forks

    started = time.monotonic()
    result: dict[str, Any] = {"examples": 0, "opened": []}
    try:
        forks.prepare(job)
        if job["isolation"] == "shared":
            from mergegate.runner.unsealed import worker

            outcome = worker.run_shared(job, state[0], state[1], result)
        else:
            outcome = run_sealed(job, result)
    except BaseException as exc:
        outcome = forks.runner_failure(exc)
    forks.report(result, outcome, started, wfd)


# ---------------------------------------------------------------- the zygote


def fork_one(job: dict[str, Any], state: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    """Fork a child for ``job``, wait for its message (or the timeout), reap it."""
    from mergegate.runner.trusted import forks

    pid, rfd = forks.spawn(lambda wfd: child(job, state, wfd), job["id"])
    return forks.collect(pid, rfd, float(job["timeout"]))


def warm_up() -> None:
    """Run one throwaway property so every lazy import and cache of Hypothesis is paid once, here.

    Its unicode table (``st.text()``) is read from, or written once to, the gate's own Hypothesis
    cache (``MERGEGATE_HYPOTHESIS_CACHE``): only this trusted side ever writes there.
    """
    import tempfile  # noqa: F401 - used by each child's _prepare

    from hypothesis import configuration, given, seed, settings
    from hypothesis import strategies as st

    cache = os.environ.get("MERGEGATE_HYPOTHESIS_CACHE")
    if cache:
        configuration.set_hypothesis_home_dir(cache)

    @seed(0)
    @settings(database=None, max_examples=3, deadline=None)
    @given(st.integers(), st.text(), st.lists(st.floats()), st.decimals(allow_nan=False), st.data())
    def warm(i: int, t: str, xs: list[float], d: Any, data: Any) -> None:
        data.draw(st.sampled_from([1, 2]))

    warm()
    configuration.set_hypothesis_home_dir(None)


def scan_nothing_loaded_so_far() -> None:
    """Keep Hypothesis from mining the gate's own source for constants to generate with.

    Hypothesis draws literals from "local" modules (any not in site-packages): with an
    editable install that would be mergegate itself, and seeds would give other examples
    than on a wheel install.  The oracle and its helpers, loaded in the child, still count.
    (A private API, used only if it is there: without it runs are slower, not wrong.)
    """
    with contextlib.suppress(Exception):
        from hypothesis.internal.conjecture import providers

        seen = getattr(providers, "_seen_modules", None)
        if isinstance(seen, set):
            seen.update(id(m) for m in list(sys.modules.values()))


def zygote() -> None:
    """Serve jobs from stdin until EOF; one JSON outcome line per job on stdout."""
    import gc

    from mergegate.runner.trusted import forks, group, session, standins  # noqa: F401 - loaded once, before any fork
    from mergegate.runner.unsealed import worker

    session.prepare()  # before the shared children's snapshot: pytest's modules are guarded too
    state = worker.zygote_state()
    warm_up()
    scan_nothing_loaded_so_far()
    # Everything loaded so far is shared by every child: keep the collector (Hypothesis runs it
    # for each test) off those objects, and their pages unwritten after the fork.
    gc.collect()
    gc.freeze()
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        if "group" in job:
            _serve_group(job["group"], state, out)
            continue
        try:
            outcome = fork_one(job, state)
        except Exception as exc:
            outcome = {"status": "fail", "witness": "Crash:runner", "error": f"fork failed: {exc}"}
        out.write(json.dumps({"id": job["id"], **outcome}) + "\n")
        out.flush()


def _serve_group(jobs: list[dict[str, Any]], state: Any, out: Any) -> None:
    from mergegate.runner.trusted import group

    answered = set()
    try:
        for outcome in group.fork_group(jobs, state):
            answered.add(outcome["id"])
            out.write(json.dumps(outcome) + "\n")
            out.flush()
    except Exception as exc:
        for job in jobs:
            if job["id"] not in answered:
                out.write(json.dumps({"id": job["id"], "status": "fail", "witness": "Crash:runner",
                                      "error": f"fork failed: {exc}"}) + "\n")
        out.flush()


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    sys.path.extend(sys.argv[1:])  # the gate's own site-packages and package root, given by the parent
    zygote()
