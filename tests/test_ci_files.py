"""The shipped CI files: the action, the workflow `gate init github` writes and the GitLab template, audited
by a workflow security auditor (zizmor) and checked against the published schemas (check-jsonschema); both
tools must fail on a deliberately bad file, so a clean result means something."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mergegate.ci import audit
from mergegate.records import policy
from tests.helpers import gate, init_repo

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PINNED = "mergegate/mergegate@0123456789abcdef0123456789abcdef01234567"
BAD_WORKFLOW = """\
on: pull_request_target
jobs:
  gate:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with: {ref: "${{ github.event.pull_request.head.sha }}"}
      - run: echo "${{ github.event.pull_request.title }}" && pip install . && gate check
"""


def tool(name: str) -> str:
    path = BIN / name
    if not path.exists():
        found = shutil.which(name)
        if found is None:
            pytest.fail(f"{name} is not installed; fix: pip install -e '.[test]' (scripts/venv.sh)")
        return found
    return str(path)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository after `gate init` and `gate init github --action <pinned>` and `gate init gitlab`."""
    repo = init_repo(tmp_path_factory.mktemp("ci-files") / "r")
    proc = gate(repo, "init", "github", "--action", PINNED, check=0)
    assert "created  .github/workflows/gate.yml" in proc.stdout
    assert "re-signed oracles/MANIFEST.sha256" in proc.stdout
    gate(repo, "init", "gitlab", check=0)
    return repo


def zizmor(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tool("zizmor"), "--offline", "--no-progress", "-q", *map(str, paths)],
                          capture_output=True, text=True, check=False)


def schema(name: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tool("check-jsonschema"), "--builtin-schema", f"vendor.{name}", str(path)],
                          capture_output=True, text=True, check=False)


def test_zizmor_finds_nothing_in_the_action_and_the_workflow(written: Path) -> None:
    proc = zizmor(written / ".github/workflows/gate.yml", ROOT / "action.yml")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zizmor_fails_a_bad_workflow(tmp_path: Path) -> None:
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text(BAD_WORKFLOW)
    proc = zizmor(bad)
    assert proc.returncode != 0
    assert "template-injection" in proc.stdout + proc.stderr and "artipacked" in proc.stdout + proc.stderr


def test_an_unpinned_action_is_what_zizmor_flags_in_the_default_workflow(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    proc = gate(repo, "init", "github", check=0)
    assert "pin" in proc.stdout
    found = zizmor(repo / ".github/workflows/gate.yml")
    assert found.returncode != 0 and "unpinned-uses" in found.stdout + found.stderr


@pytest.mark.parametrize(("name", "path"), [
    ("github-workflows", ".github/workflows/gate.yml"), ("gitlab-ci", ".gitlab-ci.yml")])
def test_the_written_files_match_their_schemas(written: Path, name: str, path: str) -> None:
    proc = schema(name, written / path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_action_matches_its_schema(tmp_path: Path) -> None:
    proc = schema("github-actions", ROOT / "action.yml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bad = tmp_path / "action.yml"
    bad.write_text("name: x\nruns: {using: composite, steps: [{run: echo}]}\n")  # a run step needs a shell
    assert schema("github-actions", bad).returncode != 0


def test_the_schema_check_fails_a_bad_workflow(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text("on: pull_request\njobs:\n  gate:\n    steps: [{run: gate check}]\n")  # no runs-on
    assert schema("github-workflows", bad).returncode != 0


def test_gate_doctor_accepts_the_written_workflow(written: Path) -> None:
    text = (written / ".github/workflows/gate.yml").read_text()
    assert audit.github_workflow(".github/workflows/gate.yml", text, policy.Policy()) == []
    data = yaml.safe_load(text)
    assert list(data[True]) == ["pull_request_target"]  # the default branch's definition, never the head's
    assert data["permissions"] == {"contents": "read"}
    checkout = data["jobs"]["gate"]["steps"][0]
    assert checkout["with"]["persist-credentials"] is False and checkout["with"]["path"] == "head"
    assert checkout["with"]["ref"] == "${{ github.event.pull_request.head.sha }}"
    assert "secrets" not in text
    ci_lines = [ln for ln in gate(written, "doctor").stdout.splitlines() if ln.startswith("ci ")]
    # The workflow passes; the GitLab template, written into the judged repository itself, is the one problem:
    # it belongs in a policy project the merge request cannot edit.
    assert len(ci_lines) == 1 and ".gitlab-ci.yml: job gate runs gate check from the project's own" in ci_lines[0]


def test_the_action_never_installs_the_head() -> None:
    text = (ROOT / "action.yml").read_text() + "".join(p.read_text() for p in sorted((ROOT / "action").iterdir()))
    assert "pip install ." not in text and "pip install -e" not in text
    assert "${{" not in "".join(p.read_text() for p in (ROOT / "action").iterdir())
    steps = yaml.safe_load((ROOT / "action.yml").read_text())["runs"]["steps"]
    for s in steps:  # inputs reach the scripts through env:, never spliced into a shell line
        assert "${{" not in s.get("run", ""), s


def test_the_gitlab_template_cannot_be_skipped_or_allowed_to_fail(written: Path) -> None:
    data = yaml.safe_load((written / ".gitlab-ci.yml").read_text())
    job = data["gate"]
    assert job["allow_failure"] is False
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    assert all("when" not in r for r in job["rules"])  # never manual, never on_failure
    script = " ".join(job["script"])
    assert "gate check" in script and "gate deps --install" in script
    assert "pip install ." not in script and "pip install -e" not in script
    assert job["variables"]["GIT_DEPTH"] == "0"


@pytest.mark.parametrize("action", ["mergegate", "a/b", "a/b@v1;rm -rf /", "a/b@$(x)", "a b/c@v1"])
def test_gate_init_github_refuses_an_action_that_is_not_owner_repo_at_ref(tmp_path: Path, action: str) -> None:
    repo = init_repo(tmp_path / "r")
    proc = gate(repo, "init", "github", "--action", action)
    assert proc.returncode == 2 and "is not OWNER/REPO@REF" in proc.stderr
    assert not (repo / ".github").exists()


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "action").iterdir()))
def test_each_action_script_is_strict_bash_that_parses(script: str) -> None:
    path = ROOT / "action" / script
    text = path.read_text()
    assert text.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in text
    assert subprocess.run(["bash", "-n", str(path)], check=False).returncode == 0
    assert f"action/{script}" in (ROOT / "action.yml").read_text()  # every script is a step of the action
