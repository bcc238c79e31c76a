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
    from mergegate.runner.trusted import proxies

    channel = _Recorder()
    proxy = proxies.make_proxy(channel, 1, desc)  # type: ignore[arg-type]
    for name in sorted(proxies.HARNESS):
        with pytest.raises(AttributeError):
            getattr(proxy, name)
    assert channel.asked == []
    assert proxy.ordinary == "from production" and channel.asked == ["ordinary"]  # everything else still forwards


def test_sealed_limits_say_so(tmp_path: Path) -> None:
    """Subclassing a production class or pickling a production object is refused in words that name the fix;
    a production generic subscripted with type variables is typing's, answered on the trusted side."""
    repo = init_repo(tmp_path / "limits")
    files: dict[str, str | bytes | None] = dict(project_files())
    files["src/shop/generic.py"] = ("from typing import Generic, TypeVar\nT = TypeVar('T')\n\n"
                                    "class Box(Generic[T]):\n    def __init__(self, v):\n        self.v = v\n")
    files["oracles/properties/test_limits.py"] = '''\
import pickle
from typing import TypeVar

from shop.generic import Box

T = TypeVar("T")
IntBox = Box[T]
ListBox = Box[int]


def test_generic_alias_loads():
    assert Box(3).v == 3


def test_subclass():
    class Mine(Box):
        pass


def test_pickle():
    pickle.dumps(Box(1))
'''
    for pid, func in (("prop.generic", "test_generic_alias_loads"), ("prop.subclass", "test_subclass"),
                      ("prop.pickle", "test_pickle")):
        files[f"oracles/catalog/{pid}.yaml"] = catalog_entry(pid, func, file="oracles/properties/test_limits.py")
    sign_and_commit(repo, files, "limits")
    rows = {r["prop"]: r for r in run_rows(repo, "--only", "prop.generic", "--only", "prop.subclass",
                                           "--only", "prop.pickle", "--seeds", "3")}
    assert rows["prop.generic"]["status"] == "pass", rows["prop.generic"]
    for pid, words in (("prop.subclass", "subclasses the production class"), ("prop.pickle", "cannot be pickled")):
        assert rows[pid]["status"] == "fail" and words in str(rows[pid]["error"]), rows[pid]
        assert "isolation: shared" in str(rows[pid]["error"])
        assert str(rows[pid]["witness"]).startswith("SealedCallError:oracles/properties/test_limits.py:"), rows[pid]
