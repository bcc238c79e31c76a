"""Hypothesis against the CLI's parsers: ledger and policy YAML, contract and run JSON, patches.

Every input goes through the real ``gate`` entry point (in process, for speed);
``GATE_FUZZ_EXAMPLES`` (default 25 per parser, about 30 s on two cores) runs more.  The
exit code is one of 0-3 and never 3 (a refused input is the user's to fix, not an
internal error); an exit 2 is one line naming the file, with a fix; nothing prints
a traceback; and the CLI never accepts (exit 0) what the parser refuses.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mergegate import main
from mergegate.errors import ConfigError
from mergegate.records import ledger
from tests.helpers import commit, git, init_repo
from tests.test_patch_reading import file_patches

FUZZ = settings(max_examples=int(os.environ.get("GATE_FUZZ_EXAMPLES", "25")), deadline=None,
                suppress_health_check=list(HealthCheck), database=None)

KEYS = ["version", "budget", "entries", "max_active", "max_added_per_patch", "id", "prop_id", "paths", "expires",
        "witness", "opened_by", "reason", "allows_agent_rely", "runner", "timeout_s", "jobs", "verdict", "seeds",
        "canaries", "secret_markers", "agents", "env", "x"]
VALUES = ["1", "0", "-1", "true", "null", "~", ".inf", ".nan", "1e400", "9" * 4400, "!!timestamp x", "2026-13-45",
          "2026-01-01", "&a [1]", "*a", "!!binary aGk=", "!!python/name:os.system", "[", "{", "'", '"\\x"', "[]",
          "{}", "- 1", "src/**", "'[bot]'", "!foo 1", "0x1F", "0o17", "2026-01-01T00:00:00+25:00", "\t", "|", ">"]


@st.composite
def yaml_texts(draw: st.DrawFn) -> bytes:
    if draw(st.booleans()):
        lines = draw(st.lists(st.tuples(st.sampled_from(["", "  ", "    ", "- ", "  - "]), st.sampled_from(KEYS),
                                        st.sampled_from(VALUES)), max_size=10))
        text = "".join(f"{indent}{key}: {value}\n" for indent, key, value in lines)
        if draw(st.booleans()):
            text = "version: 1\n" + text
        return text.encode()
    return draw(st.binary(max_size=200)) if draw(st.booleans()) else draw(st.text(max_size=200)).encode()


JSON_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=10))


@st.composite
def json_texts(draw: st.DrawFn) -> bytes:
    import json

    value = draw(st.recursive(JSON_LEAVES, lambda c: st.lists(c, max_size=3) | st.dictionaries(
        st.sampled_from(["seeds", "prop", "seed", "status", "witness", "properties", "base", "x"]), c, max_size=4),
        max_leaves=12))
    text = json.dumps(value).encode()
    cut = draw(st.integers(0, len(text)))
    return draw(st.sampled_from([text, text[:cut], text[:cut] + b"\xff" + text[cut:], b"[" * 5000, b"NaN",
                                 b'{"seeds": [' + b"7" * 4400 + b"]}", b'{"seeds": [1, 2]}', text + b"\n" + text]))


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    path = init_repo(tmp_path / "repo")
    commit(path, {"src/m.py": "def keep():\n    return 1\n", "docs/a.txt": "doc\n"}, "base")
    return path


def cli(repo: Path, *argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main.main(["-C", str(repo), *argv])
    finally:
        os.chdir(here)
    return code, err.getvalue()


def judged(code: int, err: str, source: str) -> None:
    assert code in (0, 1, 2), (code, err)  # never 3: bad input is exit 2, not an internal error
    assert "Traceback" not in err, err
    if code == 2:
        assert err.count("\n") == 1 and "fix:" in err and source in err, err


@FUZZ
@given(yaml_texts())
def test_fuzz_ledger(repo: Path, text: bytes) -> None:
    (repo / "fuzz_ledger.yaml").write_bytes(text)
    code, err = cli(repo, "freeze", "list", "--ledger", "fuzz_ledger.yaml")
    judged(code, err, "fuzz_ledger.yaml")
    refused = False
    try:
        ledger.parse(text, "fuzz_ledger.yaml")
    except ConfigError:
        refused = True
    assert (code == 2) == refused, err  # never exit 0 on what the parser refuses


@FUZZ
@given(yaml_texts())
def test_fuzz_policy(repo: Path, text: bytes) -> None:
    (repo / "gate.yaml").write_bytes(text)
    git(repo, "add", "gate.yaml")
    git(repo, "commit", "-q", "--no-verify", "--allow-empty", "-m", "policy")
    (repo / "p.diff").write_bytes(b"--- a/docs/a.txt\n+++ b/docs/a.txt\n@@ -1 +1 @@\n-doc\n+docs\n")
    code, err = cli(repo, "admit", "p.diff", "--json")
    judged(code, err, "gate.yaml")


@FUZZ
@given(json_texts(), json_texts())
def test_fuzz_contract_and_runs(repo: Path, contract: bytes, runs: bytes) -> None:
    (repo / "contract.json").write_bytes(contract)
    (repo / "runs.jsonl").write_bytes(runs)
    code, err = cli(repo, "verdict", "--contract", "contract.json", "--runs", "runs.jsonl",
                    "--base-runs", "runs.jsonl", "--json")
    assert code in (0, 1, 2), (code, err)
    assert "Traceback" not in err, err
    if code == 2:
        assert err.count("\n") == 1 and "fix:" in err and (".json" in err or ".jsonl" in err), err


@FUZZ
@given(st.lists(file_patches(), min_size=1, max_size=3), st.binary(max_size=40))
def test_fuzz_patches(repo: Path, files: list[bytes], noise: bytes) -> None:
    (repo / "p.diff").write_bytes(noise + b"\n" + b"".join(files))
    code, err = cli(repo, "admit", "p.diff", "--json")
    judged(code, err, "p.diff")


HOSTILE = [
    ("freeze_ledger.yaml", "version: 1\n" + "".join(f"l{n + 1}: &l{n + 1} [{', '.join([f'*l{n}'] * 9)}]\n"
                                                   for n in range(12)).replace("*l0", "'lol'")),
    ("freeze_ledger.yaml", "version: " + "[" * 50_000 + "\n"),
    ("freeze_ledger.yaml", "version: 1\nx: " + "9" * 100_000 + "\n"),
    ("contract.json", "[" * 200_000),
    ("contract.json", '{"seeds": [' + "1" * 200_000 + "]}"),
]


@pytest.mark.parametrize(("name", "text"), HOSTILE, ids=[f"{n}-{i}" for i, (n, _) in enumerate(HOSTILE)])
def test_hostile_inputs_under_a_memory_cap(tmp_path: Path, name: str, text: str) -> None:
    import resource
    import subprocess
    import sys

    from tests.helpers import clean_env

    (tmp_path / name).write_text(text)
    (tmp_path / "runs.jsonl").write_text("")
    argv = (["freeze", "list", "--ledger", name] if name.endswith(".yaml") else
            ["verdict", "--contract", name, "--runs", "runs.jsonl", "--base-runs", "runs.jsonl"])

    def cap() -> None:  # 400 MB of address space for the whole CLI
        resource.setrlimit(resource.RLIMIT_AS, (400 << 20, 400 << 20))

    proc = subprocess.run([sys.executable, "-m", "mergegate", *argv], cwd=tmp_path, env=clean_env(),
                          capture_output=True, text=True, timeout=60, preexec_fn=cap, check=False)
    judged(proc.returncode, proc.stderr, name)
    assert proc.returncode == 2, proc.stderr
