"""``gate draft-props`` end to end: surface, jobs, sandbox run, host validation, queue.

The host prepares inputs and reads outputs as data; drafting and triage happen
in the container.  A draft-channel fault recorded by the relay (seed 002 INFRA)
stops the trial before anything is queued.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mergegate.drafter import backends, export, relay, sandbox, stage, surface
from mergegate.drafter.channel import InfraError
from mergegate.drafter.options import Limits, Mounts
from mergegate.drafter.queue import Meta, now, put
from mergegate.errors import InternalError, UsageError
from mergegate.git import core
from mergegate.records.policy import Policy

DRAFT_S = 60.0


@dataclass(frozen=True)
class Request:
    drafter: str | None = None
    targets: tuple[str, ...] = ()
    max_n: int | None = None
    triage_s: float = 20.0
    wall_clock_s: float | None = None
    max_examples: int = 100


@dataclass(frozen=True)
class Queued:
    id: str
    target: str
    triage: stage.Triage
    new: bool


@dataclass(frozen=True)
class Report:
    backend: str
    model: str
    queued: tuple[Queued, ...]
    rejected: tuple[tuple[str, str], ...]  # (target, reason)
    seconds: float
    relay_refused: tuple[str, ...] = ()  # requests the relay refused (a candidate probing it)


def not_worth_review(result: stage.Triage) -> str | None:
    """Why a triaged candidate is not queued: it did not run.  Pure.

    A pass or a fail is queued (advisory either way); an error means the candidate
    never reached its assertions (a NameError, an import that fails, a crash).
    """
    if result.result == "error":
        first = result.witness.strip().splitlines()[0][:200] if result.witness.strip() else "no detail"
        return f"does not run: {first}"
    if result.result == "not_run":
        return "does not run: the sandbox reported no triage for it"
    return None


def job_document(backend: backends.Backend, jobs: list[backends.Job], limits: dict[str, Any]) -> dict[str, Any]:
    """The agent's job.json (pure)."""
    return {"mode": "draft", "backend": backend.name, "model": backend.model,
            "jobs": [j.to_json() for j in jobs], "limits": limits, "sys_path": ["/repo/src", "/repo"]}


def wall_clock(jobs: int, draft_s: float, triage_s: float) -> float:
    """Enough for every job's own deadline, plus start-up; capped at an hour."""
    return min(3600.0, 30.0 + jobs * (draft_s + triage_s + 2.0))


@contextlib.contextmanager
def _relay_for(backend: backends.Backend, jobs: int) -> Iterator[tuple[str | None, relay.RelayState | None]]:
    channel = backend.channel()
    if channel is None:
        yield None, None
        return
    try:
        with relay.running(channel, max_requests=jobs) as (sock, state):
            yield sock, state
    finally:
        channel.close()


def _workspace(tmp: Path, policy: Policy, top: Path, document: dict[str, Any],
               candidates: Mapping[str, bytes] | None = None) -> Mounts:
    """The export of HEAD, the job (and candidates, read-only), and the empty result file."""
    for name in ("repo", "job"):
        (tmp / name).mkdir()
    export.export_head(policy, tmp / "repo", top)
    (tmp / "job" / "job.json").write_text(json.dumps(document))
    if candidates is not None:
        (tmp / "job" / "candidates").mkdir()
        for key, code in candidates.items():
            (tmp / "job" / "candidates" / f"{key}.py").write_bytes(code)
            (tmp / "job" / "candidates" / f"{key}.py").chmod(0o444)
        (tmp / "job" / "candidates").chmod(0o555)
    for name in ("repo", "job"):
        (tmp / name).chmod(0o755)
    (tmp / "job" / "job.json").chmod(0o644)
    out = tmp / "result.json"
    out.touch()
    # The container's user must write this one file; the 0700 parent keeps host users out.
    out.chmod(0o666)
    return Mounts(repo=str(tmp / "repo"), job=str(tmp / "job"), agent=str(sandbox.agent_path()), out=str(out))


def _check_outcome(outcome: sandbox.Outcome, state: relay.RelayState | None, limits: Limits) -> None:
    if state is not None and state.infra is not None:
        raise InfraError(state.infra)
    if outcome.killed_at_wall_clock:
        raise InternalError(f"the sandbox ran past its {limits.wall_clock_s:g} s wall clock and was killed; "
                            "nothing was queued")
    if outcome.exit_code != 0:
        last = (outcome.log_tail.strip().splitlines() or ["no output"])[-1][:200]
        oom = " (out of memory)" if outcome.oom_killed else ""
        raise InternalError(f"the sandbox agent exited {outcome.exit_code}{oom}: {last}; nothing was queued")


def draft(top: Path, policy: Policy, request: Request, environ: Mapping[str, str]) -> Report:
    """Draft, triage and queue candidates for the chosen public APIs."""
    started = time.monotonic()
    backend = backends.make(request.drafter or policy.drafter.backend, policy.drafter, environ)
    head = core.head(top)
    if head is None:
        raise UsageError("the repository has no commit yet", "commit the production code first")
    apis = surface.select(surface.surface_at(head, policy, top), request.targets,
                          request.max_n or policy.drafter.max_candidates)
    if not apis:
        raise UsageError("the production code has no public function or class", "check paths.production in gate.yaml")
    jobs = backend.jobs(apis)
    # A model call may take every retry of the channel; the ghostwriter has a fixed budget.
    draft_s = policy.drafter.timeout_s * 3 + 5 if backend.name == "openai" else DRAFT_S
    limits = Limits(wall_clock_s=request.wall_clock_s or wall_clock(len(jobs), draft_s, request.triage_s))
    agent_limits = {"draft_s": draft_s, "triage_s": request.triage_s, "max_examples": request.max_examples,
                    "mem_bytes": limits.mem_bytes // 2}
    client = sandbox.connect()
    image = policy.drafter.image
    sandbox.require_image(client, image)
    sandbox.require_runtime(client, policy.drafter.runtime)
    with tempfile.TemporaryDirectory(prefix="gate-draft-", ignore_cleanup_errors=True) as tmp_name:
        tmp = Path(tmp_name)
        paths = _workspace(tmp, policy, top, job_document(backend, jobs, agent_limits))
        with _relay_for(backend, len(jobs)) as (sock, state):
            if sock is not None:
                paths = replace(paths, relay_socket=sock)
            outcome = sandbox.run(client, image, paths, limits, policy.drafter.runtime)
        _check_outcome(outcome, state, limits)
        by_key = {j.key: j for j in jobs}
        # The bytes are fixed here, as they leave the container; triage and the queue get these.
        drafted, rejected = stage.collect(stage.read_results(Path(paths.out)), by_key)
    verdicts = triage(top, policy, {d.key: d.code for d in drafted}, request.triage_s,
                      request.max_examples) if drafted else {}
    queued = []
    for item in drafted:
        job = by_key[item.key]
        result = verdicts[item.key]
        why = not_worth_review(result)
        if why is not None:
            rejected.append(stage.Rejected(item.key, why))
            continue
        meta = Meta(id=item.id, drafter=backend.name, model=backend.model, prompt_hash=job.prompt_hash,
                    target=job.target, target_path=job.api.path, triage=result.to_json(), created_at=now())
        queued.append(Queued(item.id, job.target, result, put(top, item.code, meta)))
    return Report(backend.name, backend.model, tuple(queued),
                  tuple((by_key[r.key].target, r.reason) for r in rejected),
                  time.monotonic() - started, tuple(state.refused) if state is not None else ())


def triage(top: Path, policy: Policy, candidates: Mapping[str, bytes], triage_s: float = 20.0,
           max_examples: int = 100) -> dict[str, stage.Triage]:
    """Triage given candidates (key -> code) against HEAD in one container start."""
    limits = Limits(wall_clock_s=wall_clock(len(candidates), 0.0, triage_s))
    document = {"mode": "triage", "backend": "none", "model": "", "jobs": [],
                "candidates": [{"key": k, "path": f"/job/candidates/{k}.py"} for k in candidates],
                "limits": {"draft_s": 0, "triage_s": triage_s, "max_examples": max_examples,
                           "mem_bytes": limits.mem_bytes // 2},
                "sys_path": ["/repo/src", "/repo"]}
    client = sandbox.connect()
    with tempfile.TemporaryDirectory(prefix="gate-triage-", ignore_cleanup_errors=True) as tmp_name:
        tmp = Path(tmp_name)
        paths = _workspace(tmp, policy, top, document, candidates)
        outcome = sandbox.run(client, policy.drafter.image, paths, limits, policy.drafter.runtime)
        _check_outcome(outcome, None, limits)
        got = stage.read_results(Path(paths.out)).get("triage")
        raw = got if isinstance(got, dict) else {}
        return {key: stage.parse_triage(raw.get(key)) for key in candidates}
