"""The drafter under gVisor (``drafter.runtime: runsc``) in a real container, end to end.

Needs a Docker engine with mergegate-sandbox:latest and the runtime runsc registered
(.ci/setup-docker.sh does both); skips without them, fails in CI.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests import test_drafter_sandbox as base
from tests.helpers import commit, gate, git, init_repo, sign_and_commit
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



# ---------------------------------------------------------------- escape attempts under gVisor

CONTAINED = sorted(set(base.ESCAPES) - {"fork_bomb"})


def escape_model(fake_model: Any, marker: Path) -> Any:  # noqa: F811
    def reply(req: dict[str, Any]) -> Reply:
        name = re.search(r"properties for victim\.(\w+)", json.dumps(req)).group(1)  # type: ignore[union-attr]
        code = base.ESCAPES[name].replace("{marker}", str(marker)).replace("{port}", str(model.port))
        return Reply(body=completion("```python\n" + code.replace("{{", "{").replace("}}", "}") + "```\n"))

    model = fake_model(reply)
    return model


def test_escape_attempts_are_contained_under_runsc(repo: Path, tmp_path: Path, fake_model) -> None:  # noqa: F811
    commit(repo, {"src/victim.py": "\n\n".join(f"def {n}(x: int) -> int:\n    return x" for n in CONTAINED)})
    marker = tmp_path / "escaped-to-the-host"
    model = escape_model(fake_model, marker)
    proc = gate(repo, "draft-props", "--drafter", "openai", "--target", "victim", "--triage-timeout", "5",
                "--json", env=base.model_env(model), check=0)
    report = json.loads(proc.stdout)
    triage = {q["target"].split(".")[1]: q["triage"] for q in report["queued"]}
    triage.update({r["target"].split(".")[1]: {"result": "not queued", "witness": r["reason"]}
                   for r in report["rejected"]})
    assert sorted(triage) == CONTAINED, proc.stdout
    for name, result in triage.items():
        assert result["result"] in ("fail", "not queued") and "DID " not in result["witness"], (name, result)
    assert triage["write_repo"]["witness"].count("refused") == 3
    assert triage["write_elsewhere"]["witness"].count("refused") == 6
    sock = triage["open_socket"]["witness"]
    assert "refused tcp host" in sock and "refused tcp internet" in sock and "refused dns" in sock
    assert "refused relay: FileNotFoundError" in sock and report["relay_refused"] == []
    assert "GATE_DRAFTER_API_KEY" not in triage["read_key"]["witness"] and "KEYLIKE=[]" in triage["read_key"]["witness"]
    assert "MemoryError" in triage["allocate"]["witness"] and "timeout" in triage["loop_forever"]["witness"]
    disk = triage["fill_disk"]["witness"]
    assert "one file: [Errno 27] File too large" in disk and "bytes: [Errno 28] No space left on device" in disk
    # gVisor's tmpfs ignores nr_inodes: the 256-inode cap on /staging does not hold here (its size does).
    assert not marker.exists() and git(repo, "status", "--porcelain", "--ignored", "--", "src").stdout == ""
    assert KEY not in proc.stdout + proc.stderr


def test_a_fork_bomb_under_runsc_stops_the_run_and_queues_nothing(repo: Path, tmp_path: Path, runsc_engine: Any,
                                                                  fake_model) -> None:  # noqa: F811
    # gVisor's own threads count against the container's pids limit: the bomb brings down the
    # whole sandbox (a known runsc limitation), not just the candidate.  The run fails closed.
    commit(repo, {"src/victim.py": "def fork_bomb(x: int) -> int:\n    return x\n"})
    model = escape_model(fake_model, tmp_path / "unused")
    proc = gate(repo, "draft-props", "--drafter", "openai", "--target", "victim", "--triage-timeout", "5",
                env=base.model_env(model))
    assert proc.returncode == 3 and "nothing was queued" in proc.stderr, proc.stderr
    assert base.queue_metas(repo) == []
    for box in runsc_engine.containers.list(all=True, filters={"label": "mergegate.sandbox"}):
        sources = [m["Source"] for m in box.attrs["Mounts"] if m["Destination"] == "/repo"]
        assert all(Path(s).exists() for s in sources), f"leftover container {box.short_id}"
