"""Isolation and containment choices: ``isolation: shared``, ``unsealed_pass``, ``gate catalog check``,
``runner.containment``; every row says how it ran."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import AGENT, NOT_CI, commit, gate, git, init_repo, sign_and_commit
from tests.test_runner import BROKEN_TAX, catalog_entry, project_files

# Needs production objects in its own process: a list read off a production object is a copy when sealed.
IDENTITY = '''\
from hypothesis import given
from hypothesis import strategies as st
from shop.cart import Cart


@given(st.integers(0, 5))
def test_items_alias(n):
    cart = Cart()
    for i in range(n):
        cart.items.append(i)
    assert len(cart.items) == n
'''
CART = "class Cart:\n    def __init__(self):\n        self.items = []\n"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = init_repo(tmp_path_factory.mktemp("iso"))
    files: dict[str, str | bytes | None] = dict(project_files())
    files["oracles/properties/test_cart.py"] = IDENTITY
    files["oracles/catalog/prop.cart.yaml"] = catalog_entry("prop.cart", "test_items_alias", isolation="shared",
                                                            file="oracles/properties/test_cart.py",
                                                            covers=["src/shop/cart.py"])
    files["src/shop/cart.py"] = CART
    files["oracles/catalog/claimed.yaml"] = "claimed: [prop.order_total, prop.tax_round, prop.bulk_discount]\n"
    sign_and_commit(path, files, "the shop")
    git(path, "branch", "-f", "sealed")
    entry = (path / "oracles/catalog/prop.tax_round.yaml").read_text() + "isolation: shared\n"
    sign_and_commit(path, {"oracles/catalog/prop.tax_round.yaml": entry}, "tax_round runs shared")
    return path


def check(repo: Path, base: str, head: str) -> tuple[int, dict[str, object]]:
    proc = gate(repo, "check", "--base", base, "--head", head, "--json")
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_catalog_check_finds_the_property_that_cannot_run_sealed(repo: Path) -> None:
    proc = gate(repo, "catalog", "check", "--json", "--seeds", "11")
    assert proc.returncode == 1, proc.stderr
    results = {r["prop"]: r for r in map(json.loads, proc.stdout.splitlines())}
    assert results["prop.cart"]["agree"] is False and results["prop.cart"]["catalog"] == "shared"
    assert results["prop.cart"]["shared"] == {"11": ["pass", ""]}
    assert results["prop.cart"]["sealed"]["11"][0] == "fail"
    assert all(results[p]["agree"] for p in ("prop.order_total", "prop.tax_round", "prop.bulk_discount"))
    text = gate(repo, "catalog", "check", "--seeds", "11", "--only", "prop.tax_round")
    assert text.returncode == 0 and "1 of 1 properties agree" in text.stdout


def test_rows_record_isolation_and_containment(repo: Path, tmp_path: Path, bwrap_works: bool) -> None:
    out = tmp_path / "rows.jsonl"
    gate(repo, "run", "--rev", "HEAD", "--seeds", "11", "--out", str(out), "--only", "prop.tax_round",
         "--only", "prop.order_total", check=0)
    rows = {r["prop"]: r for r in map(json.loads, out.read_text().splitlines())}
    # a shared run's process is production's: it lives in a sandbox of its own (runner/shared_box.py)
    assert (rows["prop.tax_round"]["isolation"], rows["prop.tax_round"]["containment"]) == ("shared", "bwrap")
    assert (rows["prop.order_total"]["isolation"], rows["prop.order_total"]["containment"]) == ("sealed", "bwrap")


def test_a_clean_agent_patch_that_sealed_entries_cover_is_admitted_beside_shared_entries(repo: Path,
                                                                                     bwrap_works: bool) -> None:
    """Two entries run shared (prop.tax_round, prop.cart); the patch touches orders.py, which the sealed
    prop.order_total covers and passes: the shared passes are not needed, so the admit stands."""
    base = git(repo, "rev-parse", "HEAD").stdout.strip()
    head = commit(repo, {"src/shop/orders.py": (repo / "src/shop/orders.py").read_text() + "\n# tidy\n"},
                  "tidy", env=AGENT)
    try:
        code, data = check(repo, base, head)
        assert (code, data["decision"], data["reason"]) == (0, "admit", "all_pass"), data
        assert data["runs"]["prop.tax_round"]["head"] == ["shared/bwrap"]  # its own sandbox (shared_box.py)
        assert (data["shared"], data["uncovered"]) == (["prop.cart", "prop.tax_round"], [])
        text = gate(repo, "check", "--base", base, "--head", head).stdout
        assert "Shared entries (a fail counts, a pass is no evidence): prop.cart, prop.tax_round" in text
    finally:
        git(repo, "reset", "-q", "--hard", base)


def test_an_agents_admit_resting_only_on_shared_passes_is_held_for_review(repo: Path) -> None:
    """cart.py is covered by the shared prop.cart alone: a pass production could forge is all there is."""
    base = git(repo, "rev-parse", "HEAD").stdout.strip()
    head = commit(repo, {"src/shop/cart.py": CART + "\n# tidy\n"}, "tidy", env=AGENT)
    person = commit(repo, {"src/shop/cart.py": CART + "# more\n"}, "more")
    try:
        code, data = check(repo, base, head)
        assert (code, data["decision"], data["reason"]) == (1, "review", "shared_only"), data
        assert data["uncovered"] == ["src/shop/cart.py"]
        assert {p["prop"]: p["verdict"] for p in data["properties"]}["prop.cart"] == "pass"
        text = gate(repo, "check", "--base", base, "--head", head).stdout
        assert "Covered by no passing sealed entry, only by shared ones: src/shop/cart.py" in text
        code, data = check(repo, head, person)  # a person's patch: the pass stands
        assert (code, data["decision"]) == (0, "admit")
    finally:
        git(repo, "reset", "-q", "--hard", base)


def test_the_policy_may_admit_unsealed_passes(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").stdout.strip()
    policy = (repo / "gate.yaml").read_text() + "runner: {unsealed_pass: admit}\n"
    trusted = sign_and_commit(repo, {"gate.yaml": policy}, "unsealed passes admit")
    head = commit(repo, {"src/shop/orders.py": (repo / "src/shop/orders.py").read_text() + "\n# tidy\n"},
                  "tidy", env=AGENT)
    try:
        code, data = check(repo, trusted, head)
        assert (code, data["decision"]) == (0, "admit")
    finally:
        git(repo, "reset", "-q", "--hard", base)


def test_a_shared_property_still_catches_a_regression(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").stdout.strip()
    head = commit(repo, {"src/shop/tax.py": BROKEN_TAX}, "break tax", env=AGENT)
    try:
        code, data = check(repo, base, head)
        assert (code, data["decision"]) == (1, "reject")
        assert {p["prop"]: p["reason"] for p in data["properties"]}["prop.tax_round"] == "regression"
    finally:
        git(repo, "reset", "-q", "--hard", base)


def test_a_regression_only_a_shared_entry_catches_is_rejected(repo: Path) -> None:
    """The cart forgets its items: only the shared prop.cart sees it, and a shared fail counts."""
    base = git(repo, "rev-parse", "HEAD").stdout.strip()
    broken = CART + "\n    @property\n    def items(self):\n        return []\n\n    @items.setter\n" \
                    "    def items(self, value):\n        pass\n"
    head = commit(repo, {"src/shop/cart.py": broken}, "break the cart", env=AGENT)
    try:
        code, data = check(repo, base, head)
        assert (code, data["decision"]) == (1, "reject"), data
        reasons = {p["prop"]: p["reason"] for p in data["properties"]}
        assert {p: r for p, r in reasons.items() if r != "both_pass"} == {"prop.cart": "regression"}, reasons
    finally:
        git(repo, "reset", "-q", "--hard", base)


def test_bad_isolation_and_runner_settings_are_one_line_errors(tmp_path: Path) -> None:
    path = init_repo(tmp_path / "bad")
    files: dict[str, str | bytes | None] = dict(project_files())
    files["oracles/catalog/prop.tax_round.yaml"] = files["oracles/catalog/prop.tax_round.yaml"] + "isolation: apart\n"  # type: ignore[operator]
    sign_and_commit(path, files, "bad isolation")
    proc = gate(path, "run", "--rev", "HEAD", "--out", str(tmp_path / "o.jsonl"))
    assert proc.returncode == 2
    assert "prop.tax_round.yaml" in proc.stderr and "isolation: sealed" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    for setting, fix in (("containment: jail", "auto, bwrap, none"), ("memory_mb: -1", "positive"),
                         ("unsealed_pass: maybe", "review, admit")):
        policy = (path / "gate.yaml").read_text().split("runner:")[0] + f"runner: {{{setting}}}\n"
        (path / "gate.yaml").write_text(policy)
        git(path, "add", "gate.yaml")
        git(path, "commit", "-q", "--no-verify", "-m", setting)
        proc = gate(path, "run", "--rev", "HEAD", "--out", str(tmp_path / "o.jsonl"))
        assert proc.returncode == 2 and "gate.yaml" in proc.stderr and fix in proc.stderr, proc.stderr


def test_containment_bwrap_required_but_missing_is_a_usage_error(repo: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(shutil.which("git") or "/usr/bin/git", bin_dir / "git")
    base = git(repo, "rev-parse", "HEAD").stdout.strip()
    policy = (repo / "gate.yaml").read_text() + "runner: {containment: bwrap}\n"
    sign_and_commit(repo, {"gate.yaml": policy}, "bubblewrap required")
    try:
        proc = gate(repo, "run", "--rev", "HEAD", "--seeds", "11", "--only", "prop.order_total",
                    "--out", str(tmp_path / "o.jsonl"), env={"PATH": str(bin_dir)})
        assert proc.returncode == 2
        assert "bubblewrap is not installed" in proc.stderr and "apt-get install bubblewrap" in proc.stderr
        # auto, outside CI: the run goes on uncontained, and every row says so (under CI it is exit 2:
        # tests/test_ci_where.py)
        proc = gate(repo, "run", "--rev", "sealed", "--seeds", "11", "--only", "prop.order_total",
                    "--out", str(tmp_path / "o.jsonl"), env={"PATH": str(bin_dir), **NOT_CI})
        assert proc.returncode == 0, proc.stderr
        assert "warning: bubblewrap is not installed" in proc.stderr and "containment: none" in proc.stderr
        row = json.loads((tmp_path / "o.jsonl").read_text())
        assert (row["isolation"], row["containment"], row["status"]) == ("sealed", "none", "pass")
    finally:
        git(repo, "reset", "-q", "--hard", base)


@pytest.mark.parametrize(("entries", "gaps"), [
    # a sealed pass covering the path: the shared entry is not needed
    ([("s", True, True, ("src/a.py",)), ("t", False, True, ("src/a.py",))], ()),
    # only a shared entry covers it
    ([("s", True, True, ("src/a.py",)), ("t", False, True, ("src/b.py",))], ("src/a.py",)),
    # the sealed entry covering it failed: not evidence either (and the check rejects anyway)
    ([("s", True, True, ("src/a.py",)), ("t", False, False, ("src/a.py",))], ("src/a.py",)),
    # a shared entry that declares no covers covers every path; a sealed one without covers, none
    ([("s", True, True, ()), ("t", False, True, ())], ("src/a.py", "src/c.py")),
    # no shared entry covers the path: what it always was
    ([("s", True, True, ("src/b.py",)), ("t", False, True, ("src/b.py",))], ()),
])
def test_shared_entries_only_reject(entries: list[tuple[str, bool, bool, tuple[str, ...]]],
                                    gaps: tuple[str, ...]) -> None:
    from mergegate.rules import sealed_evidence

    got = sealed_evidence.uncovered(["src/c.py", "src/a.py"] if not entries[0][3] else ["src/a.py"],
                                    [sealed_evidence.Evidence(*e) for e in entries])
    assert got == gaps


# A patch's module, imported by a shared property: in the property's own process, it tries every way
# out that process had when it was a child of the trusted evaluator's zygote, as the gate's user.
ESCAPE = """\
import os
import sys
from pathlib import Path

TRIED = []


def _try(what, action):
    try:
        action()
        TRIED.append(what)
    except Exception:
        pass


def _trusted_oracle():  # the trusted tree later sealed runs collect: on sys.path in a shared run
    for entry in sys.path:
        for path in Path(entry).glob("**/test_*.py"):
            if "trusted" in str(path):
                path.chmod(0o644)
                with open(path, "a") as f:
                    f.write("\\n# rewritten by production\\n")
                return
    raise LookupError


def _scratch():  # the check's scratch folder: the sealed runs' shared bytecode lives there
    for entry in sys.path:
        if "trusted" in entry:
            top = Path(entry)
            while top.parent != top and not top.name.startswith("gate-run-"):
                top = top.parent
            (top / "pyc-trusted" / "planted.pyc").write_bytes(b"x")
            return
    raise LookupError


_try("wrote a host folder", lambda: Path(HOST, "escaped").write_text("x"))
_try("rewrote the trusted oracle", _trusted_oracle)
_try("planted bytecode", _scratch)
_try("wrote the repository's git config", lambda: open(Path(REPO, ".git", "config"), "a").close())
_try("read the gate's environment", lambda: os.environ["GATE_TEST_SECRET"])
_try("wrote the gate's code", lambda: Path(sys.modules["mergegate"].__file__).with_name("escaped.py").write_text(""))
"""


def test_a_shared_run_cannot_reach_outside_its_own_sandbox(tmp_path: Path, bwrap_works: bool) -> None:
    """A shared property's process runs production; it may forge its own row, nothing else."""
    path = init_repo(tmp_path / "repo")
    host = tmp_path / "host"
    host.mkdir(mode=0o777)
    host.chmod(0o777)
    files: dict[str, str | bytes | None] = dict(project_files())
    files["src/shop/escape.py"] = "TRIED = []\n"
    files["oracles/properties/test_escape.py"] = "from shop import escape\n\n\ndef test_stays_inside():\n" \
                                                 "    assert escape.TRIED == []\n"
    files["oracles/catalog/prop.escape.yaml"] = catalog_entry(
        "prop.escape", "test_stays_inside", isolation="shared", file="oracles/properties/test_escape.py",
        covers=["src/shop/escape.py"])
    files["oracles/catalog/claimed.yaml"] = "claimed: [prop.order_total, prop.tax_round, prop.bulk_discount]\n"
    sign_and_commit(path, files, "the shop")
    base = git(path, "rev-parse", "HEAD").stdout.strip()
    config = (path / ".git/config").read_bytes()
    module = f"HOST = {str(host)!r}\nREPO = {str(path)!r}\n" + ESCAPE
    head = commit(path, {"src/shop/escape.py": module}, "escape", env=AGENT)
    import mergegate

    planted = Path(mergegate.__file__).with_name("escaped.py")
    try:
        proc = gate(path, "check", "--base", base, "--head", head, "--json", env={"GATE_TEST_SECRET": "token"})
    finally:
        wrote_gate = planted.exists()
        planted.unlink(missing_ok=True)  # never left in the gate's own source, even when this test fails
    assert not wrote_gate
    data = json.loads(proc.stdout)
    verdicts = {p["prop"]: (p["verdict"], p["reason"]) for p in data["properties"]}
    assert verdicts["prop.escape"] == ("pass", "both_pass"), (verdicts, proc.stderr)
    assert (proc.returncode, data["decision"], data["reason"]) == (1, "review", "shared_only")
    assert not (host / "escaped").exists()
    assert (path / ".git/config").read_bytes() == config
