"""What runs the gate is guarded by default: an agent patch editing a CI definition, a file CI calls to run
the gate, or a Python start-up hook is rejected through ``gate check``, alone or with a regression."""

from __future__ import annotations

from pathlib import Path

import pytest

from mergegate.demo import build
from mergegate.records import policy
from tests.test_check import BROKEN_TAX, _tax, check, patch

WORKFLOW = """\
name: gate
on: pull_request_target
permissions: {contents: read}
jobs:
  gate:
    runs-on: ubuntu-24.04
    steps:
      - run: gate check --base "$BASE" --head "$HEAD"
"""
GITLAB = "gate:\n  script: [gate check --base \"$BASE\" --head HEAD]\n"
MAKEFILE = "gate:\n\tgate check --base origin/main --head HEAD\n"
NOXFILE = "import nox\n\n\n@nox.session\ndef gate(session):\n    session.run('gate', 'check')\n"
CI_FILES = {".github/workflows/gate.yml": WORKFLOW, ".gitlab-ci.yml": GITLAB, "Makefile": MAKEFILE,
            "noxfile.py": NOXFILE, "tox.ini": "[testenv:gate]\ncommands = gate check\n"}

# (the file an agent's patch changes, its new text)
EDITS = [
    (".github/workflows/gate.yml", WORKFLOW.replace('--head "$HEAD"', '--head "$HEAD" || true')),
    (".github/workflows/other.yml", "on: pull_request\njobs: {}\n"),  # a new workflow: a gate-named check
    (".gitlab-ci.yml", GITLAB + "  allow_failure: true\n"),
    ("Makefile", "gate:\n\ttrue\n"),
    ("noxfile.py", NOXFILE.replace("session.run('gate', 'check')", "pass")),
    ("tox.ini", "[testenv:gate]\ncommands = true\n"),
    ("src/shop/sitecustomize.py", "import os\n"),  # imported by every interpreter with src/shop on its path
    ("src/shop/evil.pth", "import os\n"),
    (".gitattributes", "*.py -diff\n"),  # would turn the diff the canaries read into a binary patch
]


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = build.build(tmp_path_factory.mktemp("ci-guards"))
    build.commit(repo, CI_FILES, "ci: run the gate (a person's oracle-only commit)", sign=True)
    return repo


@pytest.mark.parametrize(("path", "text"), EDITS, ids=[e[0] for e in EDITS])
@pytest.mark.parametrize("regression", [False, True], ids=["alone", "with-regression"])
def test_an_agent_patch_editing_what_runs_the_gate_is_rejected(shop: Path, path: str, text: str,
                                                               regression: bool) -> None:
    files = {path: text}
    if regression:
        files["src/shop/tax.py"] = _tax(shop, BROKEN_TAX)
    head = patch(shop, "main", f"ci-{path}-{regression}", files, agent=True)
    code, data = check(shop, "main", head)
    assert code == 1
    assert data["decision"] == "reject"
    assert data["reason"] == "independence"
    assert "oracle_edited_by_agent" in data["scorecard"]["reasons"]  # type: ignore[index]
    assert path in data["scorecard"]["oracle_hits"]  # type: ignore[index]


def test_a_persons_workflow_edit_needs_the_manifest_re_signed(shop: Path) -> None:
    edit = {".github/workflows/gate.yml": WORKFLOW + "# reviewed\n"}
    unsigned = patch(shop, "main", "ci-person-unsigned", edit, agent=False)
    code, data = check(shop, "main", unsigned)
    assert (code, data["decision"], data["reason"]) == (1, "reject", "independence")
    assert data["scorecard"]["reasons"] == ["manifest_not_resigned"]  # type: ignore[index]


@pytest.mark.parametrize("path", [
    ".github/workflows/gate.yml", ".github/actions/x/action.yml", ".gitlab-ci.yml", ".gitlab/ci/gate.yml",
    "noxfile.py", "tox.ini", "Makefile", "makefile", "GNUmakefile", "sub/Makefile", "justfile", "Taskfile.yml",
    "sitecustomize.py", "src/pkg/sitecustomize.py", "usercustomize.py", "src/x.pth", "conftest.py",
    "src/conftest.py", "pytest.ini", ".pre-commit-config.yaml", ".gitattributes", ".circleci/config.yml",
    "Jenkinsfile",
])
def test_the_default_policy_guards_what_runs_the_gate(path: str) -> None:
    assert policy.Policy().classify(path) == policy.POLICY
    assert policy.parse(policy.DEFAULT_TEXT).classify(path) == policy.POLICY


@pytest.mark.parametrize("path", ["pyproject.toml", "setup.cfg", "README.md", "src/shop/orders.py", "docs/x.md"])
def test_the_default_policy_leaves_the_project_files_the_runner_never_reads(path: str) -> None:
    # The runner gives pytest its own ini (-c) and rootdir: pyproject.toml's and setup.cfg's pytest sections
    # are never loaded, so they stay production or other (their dependency tables: dependency_change).
    assert policy.Policy().classify(path) != policy.POLICY
