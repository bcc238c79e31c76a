"""Drafts worth a person's time: relations, not calls; candidates that run and assert something."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from mergegate.drafter import backends, modes, stage
from mergegate.drafter.pipeline import not_worth_review
from mergegate.drafter.surface import Api, parse_module
from mergegate.records.policy import Drafter
from tests.helpers import commit, gate, init_repo
from tests.test_drafter_channel import KEY, Reply, completion, fake_model  # noqa: F401  (fixture)

LIB = '''
def encode(s: str) -> bytes: ...
def decode(b: bytes) -> str: ...
def dumps(x: dict) -> str: ...
def loads(s: str) -> dict: ...
def to_hex(n: int) -> str: ...
def from_hex(s: str) -> int: ...
def celsius_to_fahrenheit(c: float) -> float: ...
def fahrenheit_to_celsius(f: float) -> float: ...
def normalize_path(p: str) -> str: ...
def sort_ints(xs: list[int]) -> list[int]: ...
def add(a: int, b: int) -> int: ...
class Point: ...
'''


def apis(text: str = LIB, path: str = "src/lib.py") -> list[Api]:
    return parse_module(path, text)


def test_pairs_become_round_trips_and_idempotent_names_idempotence() -> None:
    plans = {p.target: p.mode for p in modes.plan(apis())}
    assert plans == {
        "lib.encode+lib.decode": "roundtrip", "lib.dumps+lib.loads": "roundtrip",
        "lib.to_hex+lib.from_hex": "roundtrip",
        "lib.celsius_to_fahrenheit+lib.fahrenheit_to_celsius": "roundtrip",
        "lib.normalize_path": "idempotent", "lib.sort_ints": "idempotent", "lib.add": "magic", "lib.Point": "magic",
    }


def test_one_name_in_two_modules_is_an_equivalence() -> None:
    both = apis("def checksum(b: bytes) -> int: ...\n", "src/fast.py") + apis(
        "def checksum(b: bytes) -> int: ...\n", "src/slow.py")
    assert [(p.mode, p.target) for p in modes.plan(both)] == [("equivalent", "fast.checksum+slow.checksum")]


def test_ghostwriter_jobs_carry_the_mode_and_every_target() -> None:
    jobs = backends.Ghostwriter(Drafter(), {}).jobs(apis())
    first = jobs[0].to_json()
    assert first["mode"] == "roundtrip" and first["targets"] == [["lib", "encode"], ["lib", "decode"]]
    assert jobs[0].prompt == "ghostwriter.roundtrip(lib.encode, lib.decode)"
    assert jobs[0].target == "lib.encode+lib.decode"
    assert [j.key for j in jobs] == [f"c{i:03d}" for i in range(len(jobs))]


def test_the_model_prompt_asks_for_relations_checked_with_assert() -> None:
    prompt = backends.SYSTEM_PROMPT + backends.user_prompt(apis()[0])
    for words in ("round trip", "idempotence", "equivalence", "invariant", "assert", "asserts nothing"):
        assert words in prompt


@pytest.mark.parametrize(("code", "idle"), [
    ("def test_a(x=1):\n    f(x)\n", "test_a"),
    ("def test_a():\n    f(1)\n\ndef test_b():\n    assert f(1) == 1\n", "test_a"),
    ("def test_a():\n    assert f(1) == 1\n", None),
    ("def test_a():\n    if f(1) != 1:\n        raise AssertionError\n", None),
    ("import pytest\ndef test_a():\n    with pytest.raises(ValueError):\n        f(-1)\n", None),
    ("def check(x):\n    assert x > 0\n\ndef test_a():\n    check(f(1))\n", None),
    ("def test_a(self=None):\n    self.assertEqual(f(1), 1)\n", None),
])
def test_a_test_that_asserts_nothing_is_not_worth_a_review(code: str, idle: str | None) -> None:
    reason = stage.check_code(code.encode())
    if idle is None:
        assert reason is None
    else:
        assert reason is not None and reason.startswith(f"{idle} asserts nothing")


def test_a_candidate_that_does_not_run_is_not_queued() -> None:
    error = stage.Triage("error", "test_x: NameError: name 'NoneType' is not defined")
    assert not_worth_review(error) == "does not run: test_x: NameError: name 'NoneType' is not defined"
    assert not_worth_review(stage.Triage("not_run")) is not None
    assert not_worth_review(stage.Triage("fail", "Falsifying example")) is None  # a real finding: queued
    assert not_worth_review(stage.Triage("pass")) is None


def agent() -> ModuleType:
    """The in-container agent, loaded as a plain file (it never imports mergegate)."""
    path = Path(__file__).parent.parent / "src" / "mergegate" / "drafter" / "agent.py"
    spec = importlib.util.spec_from_file_location("gate_agent_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ghostwriter_output_naming_nonetype_gets_its_import() -> None:
    broken = ("# This test code was written by the `hypothesis.extra.ghostwriter` module\n\nimport lib\n"
              "from hypothesis import given, strategies as st\n\n\n@given(x=st.none())\n"
              "def test_fuzz_f(x: NoneType) -> None:\n    assert lib.f(x=x) is None\n")
    with pytest.raises(NameError, match="NoneType"):
        exec(compile(broken.replace("import lib\n", ""), "c.py", "exec", dont_inherit=True), {})
    fixed = agent().add_missing_type_imports(broken)
    assert "from types import NoneType\nimport lib\n" in fixed
    # Defines the test, no NameError:
    exec(compile(fixed.replace("import lib\n", ""), "c.py", "exec", dont_inherit=True), {})
    assert agent().add_missing_type_imports(fixed) == fixed
    untouched = "from types import NoneType\n\ndef test_a(x: NoneType) -> None:\n    assert x is None\n"
    assert agent().add_missing_type_imports(untouched) == untouched


@pytest.mark.docker
@pytest.mark.usefixtures("docker_engine")
def test_triage_imports_a_candidate_as_pytest_would(tmp_path: Path, fake_model) -> None:  # noqa: F811
    """No ``from __future__ import annotations`` leaks from the agent: a bad annotation is a NameError."""
    repo = init_repo(tmp_path / "r")
    commit(repo, {"src/calc.py": "def add(a: int, b: int) -> int:\n    return a + b\n"}, "production")
    code = ("import calc\nfrom hypothesis import given, strategies as st\n\n\n@given(x=st.none())\n"
            "def test_x(x: NoneType) -> None:\n    assert calc.add(1, 1) == 2\n")
    model = fake_model(lambda req: Reply(body=completion(f"```python\n{code}```")))
    env = {"GATE_DRAFTER_BASE_URL": model.base_url, "GATE_DRAFTER_MODEL": "m", "GATE_DRAFTER_API_KEY": KEY}
    report = json.loads(gate(repo, "draft-props", "--drafter", "openai", "--json", env=env, check=0).stdout)
    assert report["queued"] == []
    assert report["rejected"] == [{"target": "calc.add",
                                   "reason": "does not run: NameError: name 'NoneType' is not defined"}]
