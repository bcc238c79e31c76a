"""The drafter under gVisor (``drafter.runtime: runsc``) in a real container, end to end.

Needs a Docker engine with mergegate-sandbox:latest and the runtime runsc registered
(.ci/setup-docker.sh does both); skips without them, fails in CI.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import commit, gate, init_repo, sign_and_commit
from tests.test_drafter_channel import KEY, Reply, completion, fake_model  # noqa: F401  (fixture)

pytestmark = [pytest.mark.docker]

CALC = "def add(a: int, b: int) -> int:\n    return a + b\n"
HOST_KERNEL = Path("/proc/version").read_text().strip()


@pytest.fixture(scope="session")
def runsc_engine(docker_engine: Any) -> Any:
    """The engine, with gVisor's runsc registered; without it this skips, in CI it fails."""
    known = sorted(docker_engine.info().get("Runtimes") or {})
    if "runsc" in known:
        return docker_engine
    reason = f"the Docker engine has no runtime runsc (it has {', '.join(known) or 'none'})"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI must run the gVisor tests: run .ci/setup-docker.sh first")
    pytest.skip(f"{reason}; run .ci/setup-docker.sh (installs runsc and registers it)")


@pytest.fixture
def repo(tmp_path: Path, runsc_engine: Any) -> Path:
    r = init_repo(tmp_path / "r")
    commit(r, {"src/calc/__init__.py": CALC}, "production")
    sign_and_commit(r, {"gate.yaml": (r / "gate.yaml").read_text() + "drafter: {runtime: runsc}\n"})
    return r


def test_doctor_probes_inside_runsc_and_every_check_holds(repo: Path) -> None:
    out = gate(repo, "sandbox", "doctor", check=0).stdout
    assert "ok       runtime = runsc (drafter.runtime)" in out
    # The probe container ran under runsc, with our seccomp profile applied inside gVisor.
    assert "FAIL" not in out and "ok       seccomp = '2'" in out and "ok       no_new_privs = '1'" in out
    assert "ok       ptrace = 'denied" in out and "ok       io_uring_setup = 'denied" in out
    kernel = next(line for line in out.splitlines() if line.startswith("note     kernel = "))
    assert HOST_KERNEL not in kernel and "Linux version" in kernel


def test_ghostwriter_drafts_triages_and_queues_under_runsc(repo: Path) -> None:
    report = json.loads(gate(repo, "draft-props", "--json", check=0).stdout)
    assert [q["target"] for q in report["queued"]] == ["calc.add"]
    queued = report["queued"][0]
    assert queued["new"] is True and queued["triage"]["result"] == "pass" and queued["triage"]["tests"]
    meta = json.loads((repo / ".gate/queue" / queued["id"] / "meta.json").read_text())
    assert meta["status"] == "pending" and meta["drafter"] == "ghostwriter" and meta["target"] == "calc.add"
    listed = gate(repo, "queue", "list", check=0).stdout
    assert queued["id"][:12] in listed


def test_candidate_code_sees_gvisors_kernel_not_the_hosts(repo: Path, fake_model) -> None:  # noqa: F811
    probe = '''
import os
def test_probe():
    raise AssertionError("RELEASE=" + os.uname().release + " VERSION=" + open("/proc/version").read().strip())
'''
    model = fake_model(lambda req: Reply(body=completion(f"```python\n{probe}```")))
    env = {"GATE_DRAFTER_BASE_URL": model.base_url, "GATE_DRAFTER_MODEL": "test-model", "GATE_DRAFTER_API_KEY": KEY}
    proc = gate(repo, "draft-props", "--drafter", "openai", "--target", "calc.add", "--json", env=env, check=0)
    witness = json.loads(proc.stdout)["queued"][0]["triage"]["witness"]
    assert "RELEASE=" in witness and "VERSION=Linux version" in witness
    assert f"RELEASE={os.uname().release} " not in witness and HOST_KERNEL not in witness


def test_runsc_kernel_log_is_gvisors(runsc_engine: Any) -> None:
    # The kernel log of a plain runsc container: no seccomp profile (ours and Docker's deny syslog).
    log = runsc_engine.containers.run("mergegate-sandbox:latest", ["dmesg"], runtime="runsc",
                                      security_opt=["seccomp=unconfined"], network_mode="none",
                                      remove=True, stdout=True, stderr=True)
    assert "Starting gVisor" in log.decode(errors="replace")
