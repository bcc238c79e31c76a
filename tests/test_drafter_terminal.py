"""What a person's terminal shows of drafted candidates: escapes, never obeyed control sequences.

The hostile candidate ends a line of code with ``ESC[2K ESC[1G # ...``: printed raw, the
terminal erases the code and shows only the comment, so a person approves what they did not see.
"""

from __future__ import annotations

import hashlib
import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mergegate import textsafe
from mergegate.drafter import queue
from tests.helpers import clean_env, commit, gate, init_repo
from tests.test_drafter_channel import KEY, Reply, completion, fake_model  # noqa: F401  (fixture)

HIDDEN = "import os; os.system('touch /tmp/pwned')  "
HOSTILE = ("from hypothesis import given, strategies as st\n\n\n"
           "@given(st.integers())\n"
           "def test_identity(x):\n"
           f"    {HIDDEN}#\x1b[2K\x1b[1G# checks that x == x\n"
           "    assert x == x\n"
           "\x1b]0;innocent\x07\x1b]52;c;ZXZpbA==\x07# \u202eevil\u202c\n")


def in_pty(cwd: Path, *args: str) -> bytes:
    """Run the real CLI with its stdout and stderr on a pseudo-terminal; every byte it wrote."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "mergegate", *args], cwd=cwd, env=clean_env({"TERM": "xterm"}),
                            stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    os.close(follower)
    out = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    assert proc.wait(timeout=30) == 0, out
    return out


def assert_nothing_raw(out: bytes) -> None:
    shown = out.decode("utf-8").replace("\r\n", "\n")
    assert textsafe.first_unsafe(shown) is None, textsafe.first_unsafe(shown)
    assert b"\x1b" not in out and b"\xc2\x9b" not in out and "\u202e".encode() not in out


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = init_repo(tmp_path / "r")
    commit(r, {"src/calc/__init__.py": "def add(a: int, b: int) -> int:\n    return a + b\n"}, "production")
    return r


def test_queue_show_and_list_on_a_terminal_show_escapes_not_control_sequences(repo: Path) -> None:
    code = HOSTILE.encode()
    cid = hashlib.sha256(code).hexdigest()
    meta = queue.Meta(id=cid, drafter="openai", model="m\x1b]0;t\x07\x7f", prompt_hash="0" * 64,
                      target="calc.add\x1b[1A\u202e", target_path="src/calc/__init__.py",
                      triage={"result": "pass\x1b[31m", "witness": "\x9b2J", "tests": {}}, created_at=queue.now())
    assert queue.put(repo, code, meta)  # an entry an older gate queued, or a hand-edited one
    shown = in_pty(repo, "queue", "show", cid[:8])
    assert_nothing_raw(shown)
    screen = shown.decode()
    assert HIDDEN in screen and "#\\x1b[2K\\x1b[1G# checks that x == x" in screen  # the hidden code is in view
    assert "\\x1b]52;c;ZXZpbA==\\x07" in screen and "\\u202eevil" in screen
    for args in (("queue", "list"), ("queue", "list", "--json"), ("queue", "show", cid[:8], "--json")):
        assert_nothing_raw(in_pty(repo, *args))


@pytest.mark.docker
@pytest.mark.usefixtures("docker_engine")
def test_a_drafted_candidate_with_control_sequences_is_not_queued(repo: Path, fake_model) -> None:  # noqa: F811
    model = fake_model(lambda req: Reply(body=completion(f"```python\n{HOSTILE}```")))
    env = {"GATE_DRAFTER_BASE_URL": model.base_url, "GATE_DRAFTER_MODEL": "test-model", "GATE_DRAFTER_API_KEY": KEY}
    for extra in ((), ("--json",)):
        proc = gate(repo, "draft-props", "--drafter", "openai", "--target", "calc.add", *extra, env=env, check=0)
        assert_nothing_raw(proc.stdout.encode() + proc.stderr.encode())
        if extra:
            report: dict[str, Any] = json.loads(proc.stdout)
            assert report["queued"] == []
            reason = report["rejected"][0]["reason"]
        else:
            reason = proc.stdout
        assert "terminal control or invisible character (\\x1b at line 6, column 48)" in reason, proc.stdout
    assert not (repo / ".gate" / "queue").exists() or queue.entries(repo) == []
