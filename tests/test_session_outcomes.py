"""What a sealed pytest session's outcome is when pytest's own outcomes are in play: skip, xfail, deselection.

Only what the trusted oracle declares (an xfail marker) may turn a failure into pytest's "as expected";
anything production can choose at run time (a skip, an xfail() call, an exception named like pytest's
own outcomes) is a fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import init_repo, sign_and_commit
from tests.test_runner import catalog_entry, project_files, run_rows

ORACLE = '''\
import pytest

from shop import flags


@pytest.mark.xfail(reason="known: the discount table is wrong", strict=False)
def test_marked_xfail_that_fails():
    assert flags.broken() == 0


@pytest.mark.xfail(reason="fixed since", strict=True)
def test_marked_strict_xfail_that_passes():
    assert flags.broken() == 1


def test_production_chooses_xfail():
    if flags.broken():
        pytest.xfail("production said so")
    assert False


def test_production_chooses_skip():
    if flags.broken():
        pytest.skip("production said so")
    assert False


def test_production_raises_pytest_outcome():
    flags.raise_skip()


def test_skipped_by_marker_condition():
    assert True


test_skipped_by_marker_condition = pytest.mark.skipif(True, reason="never runs here")(
    test_skipped_by_marker_condition)


def test_plain_passes():
    assert flags.broken() == 1
'''

FLAGS = '''\
def broken():
    return 1


def raise_skip():
    import pytest
    pytest.skip("from production")
'''

CONFTEST = '''\
def pytest_collection_modifyitems(config, items):
    items[:] = [i for i in items if "deselected_by_conftest" not in i.name]
'''

ROWS = [
    ("prop.marked_xfail", "test_marked_xfail_that_fails", "pass", ""),
    ("prop.strict_xpass", "test_marked_strict_xfail_that_passes", "fail", "FixtureError"),
    ("prop.chooses_xfail", "test_production_chooses_xfail", "fail", "XFailed"),
    ("prop.chooses_skip", "test_production_chooses_skip", "fail", "Skipped"),
    ("prop.raises_outcome", "test_production_raises_pytest_outcome", "fail", ""),
    ("prop.marker_skip", "test_skipped_by_marker_condition", "fail", "Skipped"),
    ("prop.plain", "test_plain_passes", "pass", ""),
]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = init_repo(tmp_path_factory.mktemp("outcomes"))
    files: dict[str, str | bytes | None] = dict(project_files())
    files["oracles/properties/test_outcomes.py"] = ORACLE + "\n\ndef test_deselected_by_conftest():\n    pass\n"
    files["oracles/properties/conftest.py"] = CONFTEST
    files["src/shop/flags.py"] = FLAGS
    for pid, func, _status, _witness in ROWS:
        files[f"oracles/catalog/{pid}.yaml"] = catalog_entry(pid, func, file="oracles/properties/test_outcomes.py")
    files["oracles/catalog/prop.deselected.yaml"] = catalog_entry(
        "prop.deselected", "test_deselected_by_conftest", file="oracles/properties/test_outcomes.py")
    sign_and_commit(path, files, "outcomes")
    return path


@pytest.mark.parametrize(("pid", "func", "status", "witness"), ROWS)
def test_outcome(repo: Path, pid: str, func: str, status: str, witness: str) -> None:
    (row,) = run_rows(repo, "--only", pid, "--seeds", "7")
    assert row["status"] == status, row
    if witness:
        assert str(row["witness"]).startswith(witness + ":oracles/properties/test_outcomes.py"), row


def test_a_trusted_conftest_that_deselects_the_test_is_a_fail(repo: Path) -> None:
    (row,) = run_rows(repo, "--only", "prop.deselected", "--seeds", "7")
    assert row["status"] == "fail" and str(row["witness"]).startswith("NotCollected:"), row


class _Recorder:
    """A channel stand-in that records what would cross to the subject."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def getattr(self, obj: object, name: str) -> object:
        self.asked.append(name)
        return "from production"


@pytest.mark.parametrize("desc", [["object"], ["class", "shop.Widget", "shop"], ["module", "shop.fake_for_test"]])
def test_harness_probes_are_never_asked_of_production(desc: list[str]) -> None:
    """pytest, unittest and Hypothesis decide what is a test, a fixture, a mark or a skip by these names:
    a production object never answers them (it is never a test, fixture or mark of the trusted session)."""
    from mergegate.runner.trusted import made, proxies

    channel = _Recorder()
    proxy = made.make_proxy(channel, 1, desc)  # type: ignore[arg-type]
    for name in sorted(proxies.HARNESS):
        with pytest.raises(AttributeError):
            getattr(proxy, name)
    assert channel.asked == []
    assert proxy.ordinary == "from production" and channel.asked == ["ordinary"]  # everything else still forwards


def test_subclassing_and_pickling_run_sealed(tmp_path: Path) -> None:
    """A class statement subclassing a production class runs in the subject; a production object pickles
    there and comes back through the subject; a production generic subscripted with type variables is typing's."""
    repo = init_repo(tmp_path / "limits")
    files: dict[str, str | bytes | None] = dict(project_files())
    files["src/shop/generic.py"] = ("from typing import Generic, TypeVar\nT = TypeVar('T')\n\n"
                                    "class Box(Generic[T]):\n    def __init__(self, v):\n        self.v = v\n"
                                    "    def __eq__(self, other):\n        return True\n")
    files["oracles/properties/test_limits.py"] = '''\
import copy
import pickle
from typing import TypeVar

from shop.generic import Box

T = TypeVar("T")
IntBox = Box[T]
ListBox = Box[int]


def test_generic_alias_loads():
    assert Box(3).v == 3


def test_subclass():
    class Mine(Box[T]):
        def doubled(self):
            return self.v * 2

    assert Mine(4).doubled() == 8 and isinstance(Mine(1), Box) and Mine(1) != Box(1)


def test_pickle():
    box = pickle.loads(pickle.dumps(Box(1)))
    assert box.v == 1 and box == Box(1) and box != Box(2)  # Box.__eq__ (always true) is not asked
    assert copy.deepcopy(Box([1])).v == [1] and copy.copy(Box(2)) == Box(2)
'''
    for pid, func in (("prop.generic", "test_generic_alias_loads"), ("prop.subclass", "test_subclass"),
                      ("prop.pickle", "test_pickle")):
        files[f"oracles/catalog/{pid}.yaml"] = catalog_entry(pid, func, file="oracles/properties/test_limits.py")
    sign_and_commit(repo, files, "limits")
    rows = {r["prop"]: r for r in run_rows(repo, "--only", "prop.generic", "--only", "prop.subclass",
                                           "--only", "prop.pickle", "--seeds", "3")}
    assert {p: r["status"] for p, r in rows.items()} == dict.fromkeys(rows, "pass") and len(rows) == 3, rows


SHARED_SUITE = '''\
import pytest
from hypothesis import given, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from shop.generic import Box, lookup


class Mine(Box):  # subclassing production: run in the subject when sealed
    def doubled(self):
        return self.v * 2


def test_plain_subclass():
    assert Mine(2).doubled() == 4


class TestInClass:
    @given(st.integers())
    def test_method(self, n):
        assert Mine(n).v == n


def test_key_error_keeps_its_argument():
    with pytest.raises(KeyError) as info:
        lookup(1)
    assert info.value.args == (1,)


class Boxes(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.boxes = []

    @rule(n=st.integers())
    def add(self, n):
        self.boxes.append(Mine(n))

    @invariant()
    def all_box(self):
        assert all(isinstance(b, Box) for b in self.boxes)


BoxMachine = Boxes.TestCase
'''

GENERIC = ("from typing import Generic, TypeVar\nT = TypeVar('T')\n\n"
           "class Box(Generic[T]):\n    def __init__(self, v):\n        self.v = v\n\n"
           "def lookup(key):\n    raise KeyError(key)\n")


@pytest.mark.parametrize("isolation", ["shared", "sealed"])
def test_shared_runs_every_kind_of_node_id(tmp_path: Path, isolation: str) -> None:
    """``isolation: shared`` runs the same pytest session (plain tests, classes, state machines), production
    in-process; sealed, the subclass of a production class is made in the subject; a builtin exception keeps its
    args."""
    repo = init_repo(tmp_path / "shared")
    files: dict[str, str | bytes | None] = dict(project_files())
    files["src/shop/generic.py"] = GENERIC
    files["oracles/properties/test_shared.py"] = SHARED_SUITE
    entries = {"prop.plain_sub": "test_plain_subclass", "prop.method": "TestInClass::test_method",
               "prop.machine": "BoxMachine", "prop.keyerror": "test_key_error_keeps_its_argument"}
    for pid, rest in entries.items():
        extra = {"isolation": "shared"} if isolation == "shared" else {}
        files[f"oracles/catalog/{pid}.yaml"] = catalog_entry(pid, rest, file="oracles/properties/test_shared.py",
                                                             **extra)
    sign_and_commit(repo, files, "shared suite")
    args = [a for pid in entries for a in ("--only", pid)]
    rows = {r["prop"]: r for r in run_rows(repo, *args, "--seeds", "3")}
    assert {p: r["status"] for p, r in rows.items()} == dict.fromkeys(entries, "pass"), rows
    assert all(r["isolation"] == isolation for r in rows.values())


def test_a_builtin_exception_keeps_its_plain_arguments_sealed(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "args")
    files: dict[str, str | bytes | None] = dict(project_files())
    files["src/shop/generic.py"] = GENERIC
    files["oracles/properties/test_args.py"] = (
        "import pytest\nfrom shop.generic import lookup\n\n\ndef test_key_error():\n"
        "    with pytest.raises(KeyError) as info:\n        lookup(1)\n"
        "    assert info.value.args == (1,) and info.exconly() == 'KeyError: 1'\n")
    files["oracles/catalog/prop.args.yaml"] = catalog_entry("prop.args", "test_key_error",
                                                            file="oracles/properties/test_args.py")
    sign_and_commit(repo, files, "args")
    (row,) = run_rows(repo, "--only", "prop.args", "--seeds", "3")
    assert row["status"] == "pass", row


PARAM_SKIPS = '''\
import pytest

from shop import flags


@pytest.fixture(params=["pure", "fast"])
def impl(request):
    if request.param == "fast":
        pytest.importorskip("shop_fast_extension_not_built")  # a C extension this machine did not build
    return request.param


def test_with_impl(impl):
    assert flags.broken() == 1


@pytest.mark.parametrize("n", [1, 2])
def test_every_instance_skips(n):
    pytest.skip("nothing runs")
'''


@pytest.mark.parametrize(("func", "allow", "status", "witness"), [
    ("test_with_impl", False, "fail", "Skipped:"),
    ("test_with_impl", True, "pass", ""),
    ("test_every_instance_skips", True, "fail", "Skipped:"),  # something must have run and passed
])
def test_allow_skip_is_a_persons_choice_and_never_makes_nothing_a_pass(tmp_path: Path, func: str, allow: bool,
                                                                       status: str, witness: str) -> None:
    repo = init_repo(tmp_path / "skips")
    files: dict[str, str | bytes | None] = dict(project_files())
    files["src/shop/flags.py"] = FLAGS
    files["oracles/properties/test_skips.py"] = PARAM_SKIPS
    extra = {"allow_skip": True} if allow else {}
    files["oracles/catalog/prop.skips.yaml"] = catalog_entry(
        "prop.skips", func, file="oracles/properties/test_skips.py", **extra)
    sign_and_commit(repo, files, "skips")
    (row,) = run_rows(repo, "--only", "prop.skips", "--seeds", "3")
    assert row["status"] == status and str(row["witness"]).startswith(witness), row


STAR_ORACLE = '''\
from shop import flags


def test_flag_is_one():
    assert flags.broken() == 1


from shop.extras import *  # noqa: E402,F403 - helpers the rest of the suite re-exports
'''


def test_production_cannot_rebind_the_oracles_test_name(tmp_path: Path) -> None:
    """A star import the oracle makes after its test lets production's ``__all__`` rebind the test's name to a
    production object built to get through collection (a callable with no ``__code__`` and a ``__signature__``
    of None).  A stand-in is never a function of the trusted session, so nothing is collected for the name:
    the patch that also breaks ``flags`` is rejected by ``gate check`` with ``NotCollected``."""
    import json

    from tests.helpers import commit, gate, git

    repo = init_repo(tmp_path / "star")
    files: dict[str, str | bytes | None] = dict(project_files())
    files["src/shop/flags.py"] = FLAGS
    files["src/shop/extras.py"] = '__all__ = ["helper"]\n\n\ndef helper():\n    return 1\n'
    files["oracles/properties/test_star.py"] = STAR_ORACLE
    files["oracles/catalog/prop.star.yaml"] = catalog_entry("prop.star", "test_flag_is_one",
                                                            file="oracles/properties/test_star.py")
    sign_and_commit(repo, files, "star")
    git(repo, "checkout", "-q", "-b", "agent")
    extras = ('__all__ = ["helper", "test_flag_is_one"]\n\n\ndef helper():\n    return 1\n\n\n'
              "class _Passes:\n    __signature__ = None  # inspect reads the stand-in's\n\n"
              "    def __call__(self):\n        return None\n\n\n"
              "test_flag_is_one = _Passes()  # no __code__: pytest's collection gets past it\n")
    commit(repo, {"src/shop/flags.py": FLAGS.replace("return 1", "return 2"), "src/shop/extras.py": extras},
           "agent: rebind the test", env={"GIT_AUTHOR_EMAIL": "bot[bot]@agents.example"})
    proc = gate(repo, "check", "--base", "main", "--head", "agent", "--json")
    data = json.loads(proc.stdout)
    assert proc.returncode == 1 and data["decision"] == "reject", proc.stdout + proc.stderr
    (prop,) = [p for p in data["properties"] if p["prop"] == "prop.star"]
    assert prop["verdict"] == "fail", prop
    rows = [json.loads(line) for line in (Path(data["evidence"]) / "patch.jsonl").read_text().splitlines()]
    assert {r["witness"].partition(":")[0] for r in rows if r["prop"] == "prop.star"} == {"NotCollected"}, rows


def test_the_evaluators_imports_are_runtime_dependencies() -> None:
    """``pip install .`` alone must give the trusted evaluator everything it imports (pytest included):
    the quick start's ``gate demo`` runs in exactly that environment."""
    import re
    import sys
    import tomllib

    root = Path(__file__).resolve().parents[1]
    declared = {re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0].lower()
                for d in tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]}
    imported: set[str] = set()
    for path in (root / "src/mergegate/runner/trusted").glob("*.py"):
        imported |= set(re.findall(r"^\s*(?:import|from) (\w+)", path.read_text(), re.M))
    third_party = {m for m in imported if m not in sys.stdlib_module_names and m not in ("mergegate", "__future__")}
    names = {"_pytest": "pytest", "yaml": "pyyaml"}
    assert {names.get(m, m) for m in third_party} <= declared, (third_party, declared)
