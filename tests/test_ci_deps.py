"""Dependencies without running the patch: ``gate deps`` reads the trusted revision's declarations with git
(never building the head), and a head that changes them is ``review`` (``dependency_change``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mergegate.ci import deps
from mergegate.demo import build
from mergegate.errors import UsageError
from tests.helpers import gate
from tests.test_check import BROKEN_TAX, _tax, check, orders_comment, patch

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "shop"
version = "1.0"
dependencies = ["PyYAML>=6"]

[project.optional-dependencies]
fast = ["rich>=13"]

[tool.ruff]
line-length = 100
"""


@pytest.mark.parametrize(("old", "new", "changed"), [
    (PYPROJECT, PYPROJECT, False),
    (PYPROJECT, PYPROJECT.replace("line-length = 100", "line-length = 120"), False),  # a tool's setting
    (PYPROJECT, PYPROJECT.replace('["PyYAML>=6"]', '["PyYAML>=6", "evil"]'), True),
    (PYPROJECT, PYPROJECT.replace('"rich>=13"', '"rich>=14"'), True),
    (PYPROJECT, PYPROJECT.replace("setuptools.build_meta", "backend"), True),  # the build backend runs code
    (PYPROJECT, PYPROJECT + '\n[dependency-groups]\ndev = ["x"]\n', True),
    (PYPROJECT, PYPROJECT + '\n[tool.uv]\nindex-url = "http://x"\n', True),
    (PYPROJECT, "[project\n", True),  # unreadable: a change, to be safe
    (None, PYPROJECT, True),
    (None, "[tool.ruff]\nline-length = 1\n", False),
])
def test_pyproject_changed(old: str | None, new: str | None, changed: bool) -> None:
    assert deps.pyproject_changed(old and old.encode(), new and new.encode()) is changed


@pytest.mark.parametrize(("path", "hit"), [
    ("requirements.txt", True), ("requirements-dev.txt", True), ("requirements/base.txt", True),
    ("sub/requirements.txt", True), ("constraints.txt", True), ("setup.py", True), ("setup.cfg", False),
    ("poetry.lock", True), ("uv.lock", True), ("Pipfile", True), ("Pipfile.lock", True), ("pdm.lock", True),
    ("src/shop/setup.py", False), ("src/shop/orders.py", False), ("README.md", False),
])
def test_declaration_paths(path: str, hit: bool) -> None:
    assert deps.declaration_paths([path]) == ([path] if hit else [])


@pytest.mark.parametrize(("old", "new", "changed"), [
    (None, "[tool:pytest]\naddopts = -x\n", False),  # pytest's section: the runner never reads it
    ("[metadata]\nname = a\n", "[metadata]\nname = b\n", False),
    (None, "[options]\ninstall_requires = evil\n", True),
    ("[options.extras_require]\nx = a\n", "[options.extras_require]\nx = b\n", True),
    ("[options]\n", "[options\n", True),  # unreadable: a change, to be safe
])
def test_setup_cfg_changed(old: str | None, new: str, changed: bool) -> None:
    assert deps.content_changed("setup.cfg", old and old.encode(), new.encode()) is changed
    assert deps.content_changed("sub/setup.cfg", old and old.encode(), new.encode()) is False  # setuptools: root


def test_requirements() -> None:
    reqs = deps.requirements(PYPROJECT.encode(), ["fast"], {"requirements.txt": b"# pinned\nattrs==23.1 # why\n\n"})
    assert reqs == ["PyYAML>=6", "rich>=13", "attrs==23.1"]
    for bad in (b"-e .\n", b".\n", b"-r other.txt\n", b"--index-url http://x\n", b"https://x/y.whl\n"):
        with pytest.raises(UsageError, match=r"requirements\.txt:1: .* is not a plain requirement"):
            deps.requirements(None, (), {"requirements.txt": bad})
    with pytest.raises(UsageError, match="not a distribution"):
        deps.requirements(b'[project]\ndependencies = ["shop @ file:///tmp/x"]\n')
    with pytest.raises(UsageError, match="no optional dependency group 'gpu'"):
        deps.requirements(PYPROJECT.encode(), ["gpu"])


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = build.build(tmp_path_factory.mktemp("deps"))
    build.commit(repo, {"pyproject.toml": PYPROJECT, "requirements.txt": "PyYAML>=6\n"}, "packaging (a person)")
    return repo


def test_gate_deps_prints_the_trusted_revisions_declarations(shop: Path) -> None:
    head = patch(shop, "main", "deps-print", {"pyproject.toml": PYPROJECT.replace('["PyYAML>=6"]', '["evil"]')})
    proc = gate(shop, "deps", "--base", "main", "--head", head, "--extra", "fast", "--requirements",
                "requirements.txt", check=0)
    lines = [ln for ln in proc.stdout.splitlines() if not ln.startswith("#")]
    assert lines == ["PyYAML>=6", "rich>=13"]  # the merge-base's, never the head's "evil"
    assert "nothing of the head is built" in proc.stdout
    proc = gate(shop, "deps", "--base", "main", "--head", head, "--install", check=0)
    assert "Requirement already satisfied" in proc.stdout + proc.stderr  # PyYAML: the gate's own dependency


@pytest.mark.parametrize(("name", "files"), [
    ("new dependency", lambda r: {"pyproject.toml": PYPROJECT.replace('["PyYAML>=6"]', '["PyYAML>=6", "x"]'),
                                  "src/shop/orders.py": orders_comment(r)}),
    ("requirements", lambda r: {"requirements.txt": "PyYAML>=6\nx==1\n"}),
    ("lock file, with a regression", lambda r: {"uv.lock": "version = 1\n", "src/shop/tax.py": _tax(r, BROKEN_TAX)}),
])
def test_a_head_changing_dependency_declarations_is_review(shop: Path, name: str, files: object) -> None:
    head = patch(shop, "main", "deps-" + name.replace(" ", "-").replace(",", ""), files(shop))  # type: ignore[operator]
    code, data = check(shop, "main", head)
    assert (code, data["decision"], data["reason"]) == (1, "review", "dependency_change")
    assert data["dependency_files"] and all(p in files(shop) for p in data["dependency_files"])  # type: ignore[operator]
    proc = gate(shop, "check", "--base", "main", "--head", head)
    assert "dependency declarations changed: " in proc.stdout and "decision: review (dependency_change)" in proc.stdout
    summary = json.loads((Path(proc.stdout.split("evidence: ")[-1].strip()) / "decision.json").read_text())
    assert summary["reason"] == "dependency_change"


def test_a_tool_setting_in_pyproject_is_not_a_dependency_change(shop: Path) -> None:
    head = patch(shop, "main", "deps-tool", {"pyproject.toml": PYPROJECT.replace("= 100", "= 120")})
    code, data = check(shop, "main", head)
    assert (code, data["decision"], data["dependency_files"]) == (0, "admit", [])
