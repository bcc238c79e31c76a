"""The gate knows where it runs: under CI, containment ``auto`` without a working bubblewrap is exit 2 naming
the fix; ``gate check`` never admits from a job whose workflow file the patch changed; ``gate doctor`` names a
CI setup a pull request could bypass."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from mergegate import ci
from mergegate.ci import audit
from mergegate.demo import build
from mergegate.records import policy
from tests.helpers import NOT_CI, gate
from tests.test_check import check, orders_comment, patch

GITHUB = {"CI": "true", "GITHUB_ACTIONS": "true"}
FAKE_BWRAP = "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"


@pytest.mark.parametrize(("env", "name"), [
    ({}, None), (NOT_CI, None), ({"CI": "false"}, None), ({"CI": "0"}, None), ({"CI": "true"}, "CI"),
    ({"CI": "1"}, "CI"), (GITHUB, "GitHub Actions"), ({"GITLAB_CI": "true", "CI": "true"}, "GitLab CI"),
    ({"GITHUB_ACTIONS": "true"}, "GitHub Actions"),
])
def test_where(env: dict[str, str], name: str | None) -> None:
    assert ci.where(env) == name


@pytest.mark.parametrize(("env", "path"), [
    ({**GITHUB, "GITHUB_WORKFLOW_REF": "octo/shop/.github/workflows/gate.yml@refs/pull/7/merge"},
     ".github/workflows/gate.yml"),
    ({**GITHUB, "GITHUB_WORKFLOW_REF": "octo/shop/.github/workflows/gate.yml@refs/heads/main"},
     ".github/workflows/gate.yml"),
    ({**GITHUB}, None),
    ({"GITHUB_WORKFLOW_REF": "octo/shop/.github/workflows/gate.yml@refs/heads/main"}, None),  # not in Actions
    ({"GITLAB_CI": "true"}, ".gitlab-ci.yml"),
    ({"GITLAB_CI": "true", "CI_CONFIG_PATH": "ci/gate.yml"}, "ci/gate.yml"),
    ({"GITLAB_CI": "true", "CI_CONFIG_PATH": ".gitlab-ci.yml@group/gate-policy"}, None),  # another project
    ({"GITLAB_CI": "true", "CI_CONFIG_PATH": "https://example.com/gate.yml"}, None),
])
def test_definition(env: dict[str, str], path: str | None) -> None:
    assert ci.definition(env) == path


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build.build(tmp_path_factory.mktemp("ci-where"))


def _fake_bwrap(tmp_path: Path) -> str:
    """A PATH whose bwrap fails the way it does on ubuntu-24.04 runners (AppArmor) and in Docker jobs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bwrap").write_text(FAKE_BWRAP)
    (bin_dir / "bwrap").chmod(0o755)
    os.symlink(shutil.which("git") or "/usr/bin/git", bin_dir / "git")
    return str(bin_dir)


def test_containment_auto_without_bubblewrap_under_ci_is_exit_2_naming_the_fix(shop: Path, tmp_path: Path) -> None:
    head = patch(shop, "main", "ci-containment", {"src/shop/orders.py": orders_comment(shop)})
    path = _fake_bwrap(tmp_path)
    proc = gate(shop, "check", "--base", "main", "--head", head, env={"PATH": path, **GITHUB})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "setting up uid map: Permission denied" in proc.stderr
    assert "this is GitHub Actions" in proc.stderr
    assert "kernel.apparmor_restrict_unprivileged_userns=0" in proc.stderr and "--privileged" in proc.stderr
    assert "runner.containment: none" in proc.stderr
    assert "decision: admit" not in proc.stdout
    # Outside CI the same machine runs production as a plain process group, and says so.
    proc = gate(shop, "check", "--base", "main", "--head", head, "--json", env={"PATH": path, **NOT_CI})
    assert proc.returncode == 0, proc.stderr
    assert "containment: none" in proc.stderr


def test_a_patch_changing_the_workflow_that_runs_the_check_is_never_admitted(shop: Path) -> None:
    workflow = ".github/workflows/gate.yml"
    head = patch(shop, "main", "ci-own-workflow", {workflow: "on: pull_request_target\njobs: {}\n"}, agent=False,
                 sign=True)  # a person's signed oracle-only change: the scorecard accepts it
    code, data = check(shop, "main", head, env=NOT_CI)
    assert (code, data["decision"]) == (0, "admit")
    env = {**GITHUB, "GITHUB_WORKFLOW_REF": f"octo/shop/{workflow}@refs/pull/3/merge"}
    code, data = _github_check(shop, head, env)
    assert (code, data["decision"], data["reason"]) == (1, "review", "workflow_changed")
    # Another workflow ran the check: this patch did not write its judge.
    env = {**GITHUB, "GITHUB_WORKFLOW_REF": "octo/shop/.github/workflows/other.yml@refs/heads/main"}
    code, data = _github_check(shop, head, env)
    assert (code, data["decision"]) == (0, "admit")


def _github_check(repo: Path, head: str, env: dict[str, str]) -> tuple[int, dict[str, object]]:
    """gate check --json in a GitHub job: the JSON sits between the fence and the annotations."""
    proc = gate(repo, "check", "--base", "main", "--head", head, "--json", env=env)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.returncode, json.loads("\n".join(ln for ln in proc.stdout.splitlines() if not ln.startswith("::")))


BAD = """\
on: pull_request
jobs:
  gate:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: pip install -e .
      - run: gate check --base origin/main --head HEAD
        env: {TOKEN: "${{ secrets.DEPLOY }}"}
"""


def test_doctor_names_a_ci_setup_a_pull_request_could_bypass() -> None:
    unguarded = policy.parse('version: 1\npaths: {policy: ["gate.yaml"]}\nrunner: {containment: none}\n')
    found = audit.github_workflow(".github/workflows/gate.yml", BAD, unguarded)
    text = "\n".join(f"{p.what} | {p.fix}" for p in found)
    assert "on: pull_request" in text and "is not guarded" in text and "pull_request_target" in text
    assert "runner.containment: none" in text
    assert "persist-credentials: false" in text
    assert "build backend" in text and "gate deps --install" in text
    assert "permissions: {contents: read}" in text
    assert "secret" in text
    assert len(found) == 6
    guarded = audit.github_workflow(".github/workflows/gate.yml", BAD, policy.Policy())
    assert not any("is not guarded" in p.what for p in guarded) and len(guarded) == 5
    # A workflow that never runs the gate is none of the gate's business.
    assert audit.github_workflow(".github/workflows/docs.yml", "on: pull_request\njobs: {}\n", unguarded) == []


def test_doctor_on_a_gitlab_project_running_its_own_gate_job() -> None:
    found = audit.gitlab_ci(".gitlab-ci.yml", "gate:\n  script: [gate check --head HEAD]\n  allow_failure: true\n")
    assert [p.fix.split()[0] for p in found] == ["keep", "remove"]
    assert "CI/CD configuration file" in found[0].fix


def test_gate_doctor_reports_the_workflow(tmp_path: Path) -> None:
    from tests.helpers import init_repo, write

    repo = init_repo(tmp_path / "r")
    write(repo, {".github/workflows/gate.yml": BAD})
    proc = gate(repo, "doctor")
    assert proc.returncode == 1
    ci_lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("ci ")]
    assert len(ci_lines) == 5 and all("PROBLEM" in ln for ln in ci_lines), proc.stdout
    assert "fix: run the gate on pull_request_target" in proc.stdout
