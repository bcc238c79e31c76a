"""``gate doctor``'s reading of the CI files: a setup a patch could bypass, with the fix (pure: texts in)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mergegate.errors import GateError
from mergegate.records import yamlio
from mergegate.records.policy import POLICY, Policy

INIT = "gate init github writes one that does"
TARGET_FIX = ("run the gate on pull_request_target (the default branch's definition judges the head, checked "
              f"out by SHA; {INIT}), or as a ruleset-required workflow from another repository")


@dataclass(frozen=True)
class Problem:
    path: str
    what: str
    fix: str


def _triggers(doc: Mapping[Any, Any]) -> set[str]:
    on = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` key as true
    if isinstance(on, str):
        return {on}
    if isinstance(on, list):
        return {str(e) for e in on}
    if isinstance(on, dict):
        return {str(k) for k in on}
    return set()


def _steps(job: Any) -> list[dict[str, Any]]:
    steps = job.get("steps") if isinstance(job, dict) else None
    return [s for s in steps if isinstance(s, dict)] if isinstance(steps, list) else []


def runs_gate(step: Mapping[str, Any]) -> bool:
    run, uses = str(step.get("run", "")), str(step.get("uses", ""))
    return "gate check" in run or "mergegate" in uses.split("@")[0].lower()


def _gate_jobs(doc: Mapping[Any, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    jobs = doc.get("jobs")
    for name, job in (jobs.items() if isinstance(jobs, dict) else ()):
        if isinstance(job, dict) and any(runs_gate(s) for s in _steps(job)):
            yield str(name), job


def _mapping(path: str, text: str | bytes) -> tuple[dict[Any, Any] | None, list[Problem]]:
    """A CI file's top-level mapping; None with the problem for unreadable YAML, None alone for another shape."""
    try:
        doc = yamlio.load(text, path).data
    except GateError as exc:
        return None, [Problem(path, exc.render(), "fix the YAML syntax")]
    return (doc if isinstance(doc, dict) else None), []


def github_workflow(path: str, text: str | bytes, policy: Policy) -> list[Problem]:
    """What lets a pull request bypass or forge the gate in one workflow file."""
    doc, unreadable = _mapping(path, text)
    if doc is None:
        return unreadable
    jobs = list(_gate_jobs(doc))
    if not jobs:
        return []
    out: list[Problem] = []
    on = _triggers(doc)
    if "pull_request" in on:
        guarded = policy.classify(path) == POLICY
        out.append(Problem(path, "runs gate check on: pull_request, so the pull request's own copy of this file "
                           "runs: a patch that adds `|| true` to the step passes every check"
                           + ("" if guarded else f", and {path} is not guarded in paths.policy"),
                           TARGET_FIX + ("" if guarded else "; add .github/** to paths.policy")))
    if policy.runner.containment == "none":
        out.append(Problem(path, "gate.yaml says runner.containment: none: production runs uncontained in the job "
                           "that decides the verdict", "set up bubblewrap in the job and write runner.containment: "
                           "auto (or bwrap)"))
    for name, job in jobs:
        out += _job(path, name, job, doc)
    return out


def _job(path: str, name: str, job: Mapping[str, Any], doc: Mapping[Any, Any]) -> list[Problem]:
    out = []
    for step in _steps(job):
        uses = str(step.get("uses", ""))
        raw = step.get("with")
        with_: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if uses.startswith("actions/checkout@") and str(with_.get("persist-credentials", "")).lower() != "false":
            out.append(Problem(path, f"job {name}: actions/checkout keeps the job's token in .git/config, where "
                               "anything the job runs can read it", "add with: {persist-credentials: false}"))
        run = str(step.get("run", ""))
        if any(cmd in run for cmd in ("pip install .", "pip install -e", "pip install --editable", "uv pip install .")):
            out.append(Problem(path, f"job {name}: installs the checked-out project, which runs its build "
                               "backend (the patch's code) outside the sandbox", "install the trusted revision's "
                               "dependencies with gate deps --install, never the head itself"))
    if "permissions" not in job and "permissions" not in doc:
        out.append(Problem(path, f"job {name}: no permissions: block, so the token has the repository's default "
                           "(often write)", "add permissions: {contents: read}"))
    if "secrets." in str(job):
        out.append(Problem(path, f"job {name}: reads a secret in the job that runs the patch's code",
                           "the gate needs no secret: remove it"))
    return out


def gitlab_ci(path: str, text: str | bytes) -> list[Problem]:
    """The repository's own .gitlab-ci.yml running the gate: a merge request edits its own pipeline."""
    doc, unreadable = _mapping(path, text)
    if doc is None:
        return unreadable
    out = []
    for name, job in doc.items():
        if not isinstance(job, dict):
            continue
        script = " ".join(str(job.get(k, "")) for k in ("script", "before_script"))
        if "gate check" not in script:
            continue
        out.append(Problem(path, f"job {name} runs gate check from the project's own {path}: a merge request's "
                           "pipeline runs the merge request's copy", "keep the gate job in a policy project and set "
                           "Settings > CI/CD > CI/CD configuration file to .gitlab-ci.yml@group/gate-policy "
                           "(docs/ci-gitlab.md)"))
        if job.get("allow_failure") not in (None, False):
            out.append(Problem(path, f"job {name}: allow_failure lets a failed gate pass the pipeline",
                               "remove allow_failure"))
    return out
