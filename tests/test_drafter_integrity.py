"""What triage ran is what was queued, and triage cannot vouch for a candidate (real container).

A candidate runs in a child of the in-container agent.  It can forge its own report
(write a pass into the result pipe), so triage is advisory and never waives a person's
review; it cannot trace the agent, rewrite the bytes the host hashed, or forge the
agent's report for another candidate.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import commit, gate, git, init_repo
from tests.test_drafter_channel import KEY, Reply, completion, fake_model  # noqa: F401  (fixture)

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_engine")]

VICTIM = "\n\n".join(f"def {name}(x: int) -> int:\n    return x" for name in ("forge", "trace", "rewrite")) + "\n"

FORGE = '''
import os
def test_forged():
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + fd).startswith("pipe:"):
                os.write(int(fd), b'{"result": "pass", "witness": "", "tests": {"test_forged": "pass"}}')
        except OSError:
            pass
    os._exit(0)
    assert False, "never reached"
'''

# Each escape attempt reports what it did or why it was refused (candidate code, run in the container).
ATTEMPT = '''
def attempt(label, action):
    try:
        action()
        return "DID " + label
    except BaseException as exc:
        return "refused " + label + ": " + type(exc).__name__
'''

TRACE = '''
import ctypes, os
''' + ATTEMPT + '''def ptrace():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(16, os.getppid(), 0, 0) != 0:  # PTRACE_ATTACH to the agent
        raise OSError(ctypes.get_errno(), "ptrace")
def test_trace():
    agent = os.getppid()
    out = [attempt("ptrace", ptrace),
           attempt("mem", lambda: open("/proc/%d/mem" % agent, "rb").read(1)),
           attempt("fds", lambda: os.listdir("/proc/%d/fd" % agent)),
           attempt("environ", lambda: open("/proc/%d/environ" % agent, "rb").read())]
    raise AssertionError(" | ".join(out))
'''

REWRITE = '''
import os
''' + ATTEMPT + '''def test_rewrite():
    mine = [os.path.join("/job/candidates", n) for n in sorted(os.listdir("/job/candidates"))]
    out = [attempt("rewrite " + p, lambda p=p: open(p, "w").write("def test_x(): pass\\n")) for p in mine]
    out.append(attempt("new file", lambda: open("/job/candidates/c009.py", "w").write("x")))
    forged = {"triage": {k: {"result": "pass", "witness": ""} for k in ("c000", "c001", "c002")}}
    open("/out/result.json", "w").write(__import__("json").dumps(forged))  # the agent writes last
    raise AssertionError(" | ".join(out))
'''

CODES = {"forge": FORGE, "trace": TRACE, "rewrite": REWRITE}


def test_triage_cannot_vouch_for_a_candidate_nor_change_what_is_queued(tmp_path: Path, fake_model) -> None:  # noqa: F811
    repo = init_repo(tmp_path / "r")
    commit(repo, {"src/victim.py": VICTIM}, "production")

    def reply(req: dict[str, Any]) -> Reply:
        name = re.search(r"properties for victim\.(\w+)", json.dumps(req)).group(1)  # type: ignore[union-attr]
        return Reply(body=completion(f"```python\n{CODES[name]}```"))

    model = fake_model(reply)
    env = {"GATE_DRAFTER_BASE_URL": model.base_url, "GATE_DRAFTER_MODEL": "test-model", "GATE_DRAFTER_API_KEY": KEY}
    proc = gate(repo, "draft-props", "--drafter", "openai", "--target", "victim", "--triage-timeout", "10", "--json",
                env=env, check=0)
    report = json.loads(proc.stdout)
    queued = {q["target"].split(".")[1]: q for q in report["queued"]}
    assert set(queued) == set(CODES), proc.stdout
    for name, q in queued.items():  # the queue holds exactly the bytes the model served, under their hash
        stored = (repo / ".gate" / "queue" / q["id"] / "candidate.py").read_bytes()
        assert stored == CODES[name].strip().encode() + b"\n"
        assert q["id"] == hashlib.sha256(stored).hexdigest()
    trace = queued["trace"]["triage"]
    assert trace["result"] == "fail" and "DID" not in trace["witness"], trace
    assert trace["witness"].count("refused") == 4
    rewrite = queued["rewrite"]["triage"]
    assert rewrite["result"] == "fail" and "DID" not in rewrite["witness"], rewrite
    assert rewrite["witness"].count("refused") == 4  # three candidates plus the new file
    # The forged pass stands for its own candidate only, and waives nothing.
    forged = queued["forge"]
    assert forged["triage"]["result"] == "pass"
    refused = gate(repo, "queue", "accept", forged["id"][:8], check=2)
    assert "needs a person's review whatever triage said" in refused.stderr
    assert git(repo, "status", "--porcelain", "--untracked-files=all").stdout == ""
