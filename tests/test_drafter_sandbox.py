"""The drafter in a real container: drafting, triage, escape attempts, INFRA, engine errors.

Needs a Docker engine with mergegate-sandbox:latest (.ci/setup-docker.sh); skips
without one, fails in CI.  The model is a real HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from mergegate.drafter import image, sandbox
from tests.helpers import commit, gate, git, init_repo, sign_and_commit
from tests.test_drafter_channel import KEY, Reply, completion, fake_model  # noqa: F401  (fixture)

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_engine")]

CALC = '''"""A tiny library."""


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def encode(s: str) -> bytes:
    return s.encode("utf-8")


def decode(b: bytes) -> str:
    return b.decode("utf-8")


def untyped(x):
    return x
'''


def queue_metas(repo: Path) -> list[dict[str, Any]]:
    qdir = repo / ".gate" / "queue"
    if not qdir.is_dir():
        return []
    return [json.loads((d / "meta.json").read_text()) for d in sorted(qdir.iterdir())
            if d.is_dir() and not d.name.startswith(".")]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = init_repo(tmp_path / "r")
    commit(r, {"src/calc/__init__.py": CALC}, "production")
    return r


def model_env(model: Any) -> dict[str, str]:
    return {"GATE_DRAFTER_BASE_URL": model.base_url, "GATE_DRAFTER_MODEL": "test-model",
            "GATE_DRAFTER_API_KEY": KEY}


def test_ghostwriter_drafts_triages_and_queues(repo: Path) -> None:
    proc = gate(repo, "draft-props", "--json", check=0)
    report = json.loads(proc.stdout)
    by_target = {q["target"]: q for q in report["queued"]}
    # encode/decode is a pair: one round-trip property, not two fuzz tests that assert nothing.
    assert set(by_target) == {"calc.add", "calc.encode+calc.decode"}
    assert by_target["calc.add"]["triage"]["result"] == "pass"
    assert by_target["calc.encode+calc.decode"]["triage"]["result"] == "pass"
    assert [r["target"] for r in report["rejected"]] == ["calc.untyped"]
    assert "st.nothing()" in report["rejected"][0]["reason"]
    roundtrip = next(m for m in queue_metas(repo) if m["target"] == "calc.encode+calc.decode")
    code = (repo / ".gate/queue" / roundtrip["id"] / "candidate.py").read_text()
    assert "def test_roundtrip_encode_decode" in code and "assert s == value1" in code
    metas = {m["target"]: m for m in queue_metas(repo)}
    add = metas["calc.add"]
    code = (repo / ".gate/queue" / add["id"] / "candidate.py").read_bytes()
    assert add["id"] == hashlib.sha256(code).hexdigest()
    assert add["drafter"] == "ghostwriter" and add["model"].startswith("hypothesis.extra.ghostwriter")
    assert add["prompt_hash"] == hashlib.sha256(b"ghostwriter.magic(calc.add)").hexdigest()
    assert add["status"] == "pending" and add["created_at"].endswith("Z")
    assert add["target_path"] == "src/calc/__init__.py"
    assert git(repo, "status", "--porcelain").stdout == ""  # .gate/ ignores itself
    again = json.loads(gate(repo, "draft-props", "--json", "--target", "calc.add", check=0).stdout)
    assert [q["new"] for q in again["queued"]] == [False]  # same candidate, same id, queued once


def test_triage_runs_against_head_not_the_work_tree(repo: Path) -> None:
    (repo / "src/calc/__init__.py").write_text(CALC.replace("return a + b", "return a - b"))
    report = json.loads(gate(repo, "draft-props", "--json", "--target", "calc.add", check=0).stdout)
    assert report["queued"][0]["triage"]["result"] == "pass"


def test_the_oracle_tree_is_not_in_the_sandbox(repo: Path, fake_model) -> None:  # noqa: F811
    sign_and_commit(repo, {"oracles/fixtures/secret.json": '{"answer": 42}'})
    probe = '''
import os
def test_probe():
    seen = sorted(os.listdir("/repo"))
    raise AssertionError("SEEN=" + repr(seen) + " ORACLES=" + repr(os.path.exists("/repo/oracles")))
'''
    model = fake_model(lambda req: Reply(body=completion(f"```python\n{probe}```")))
    proc = gate(repo, "draft-props", "--drafter", "openai", "--target", "calc.add", "--json",
                env=model_env(model), check=0)
    witness = json.loads(proc.stdout)["queued"][0]["triage"]["witness"]
    assert "ORACLES=False" in witness and "'src'" in witness and "gate.yaml" not in witness


# ---------------------------------------------------------------- escape attempts

VICTIM = "\n\n".join(f"def {name}(x: int) -> int:\n    return x" for name in (
    "write_repo", "write_elsewhere", "open_socket", "read_key", "fork_bomb", "allocate", "loop_forever",
    "fill_disk")) + "\n"

ATTEMPT = '''
import os
def attempt(label, action):
    try:
        action()
        return "DID " + label
    except BaseException as exc:
        return "refused " + label + ": " + type(exc).__name__ + ": " + str(exc)[:80]
'''

ESCAPES = {
    "write_repo": ATTEMPT + '''
def test_escape():
    out = [attempt(p, lambda p=p: open(p, "a").write("pwned")) for p in
           ("/repo/src/victim.py", "/repo/escape.txt", "/repo/.git/config")]
    raise AssertionError(" | ".join(out))
''',
    "write_elsewhere": ATTEMPT + '''
def test_escape():
    targets = ["/etc/passwd", "/usr/local/lib/python3.11/dist-packages/hypothesis/__init__.py", "/job/job.json",
               "/opt/gate/agent.py", "/escape.txt", "{marker}"]
    out = [attempt(p, lambda p=p: open(p, "a").write("pwned")) for p in targets]
    raise AssertionError(" | ".join(out))
''',
    "open_socket": ATTEMPT + '''
import socket
def relay():
    s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect("/relay/model.sock")
    s.sendall(b"POST /v1/chat/completions HTTP/1.0\\r\\nContent-Length: 15\\r\\n\\r\\n" + b'{{"messages":[]}}')
    answer = s.recv(100)
    if b" 200 " in answer: return
    raise PermissionError(answer.split(b"\\r\\n")[0].decode())
def test_escape():
    out = [attempt("tcp host", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=3)),
           attempt("tcp internet", lambda: socket.create_connection(("1.1.1.1", 53), timeout=3)),
           attempt("dns", lambda: socket.getaddrinfo("example.com", 80)),
           attempt("relay", relay)]
    raise AssertionError(" | ".join(out))
''',
    "read_key": ATTEMPT + '''
def test_escape():
    found = dict(os.environ)
    for pid in ("1", "self"):
        try:
            found[pid] = open("/proc/%s/environ" % pid, "rb").read().decode(errors="replace")
        except OSError as exc:
            found[pid] = str(exc)
    with open("/staging/leak.txt", "w") as handle:
        handle.write(repr(found))
    keylike = [v for v in found.values() if "sk-" in v]
    raise AssertionError("ENV=" + repr(sorted(os.environ)) + " KEYLIKE=" + repr(keylike))
''',
    "fork_bomb": '''
import os
def test_escape():
    assert os.getpid() > 1
    while True:
        try:
            os.fork()
        except OSError:
            pass
''',
    "allocate": '''
def test_escape():
    assert True
    hog = bytearray(4 * 1024 ** 3)
    hog[-1] = 1
''',
    "loop_forever": '''
def test_escape():
    assert True
    while True:
        pass
''',
    "fill_disk": '''
import os
def test_escape():
    out, chunk = [], b"x" * 2 ** 20
    try:
        with open("/staging/big.bin", "wb") as handle:
            for _ in range(100):
                handle.write(chunk)
                handle.flush()
    except OSError as exc:
        out.append("one file: " + str(exc))
    try:
        for i in range(100):
            with open("/staging/part%d.bin" % i, "wb") as handle:
                for _ in range(3):
                    handle.write(chunk)
    except OSError as exc:
        out.append("bytes: " + str(exc))
    for i in range(100):
        try:
            os.unlink("/staging/part%d.bin" % i)
        except OSError:
            pass
    try:
        for i in range(5000):
            open("/staging/f%d" % i, "w").close()
    except OSError as exc:
        out.append("files: %d %s" % (i, exc))
    raise AssertionError(" | ".join(out))
''',
}


def test_escape_attempts_are_contained_and_reported(repo: Path, tmp_path: Path, fake_model) -> None:  # noqa: F811
    commit(repo, {"src/victim.py": VICTIM}, "victim")
    marker = tmp_path / "escaped-to-the-host"
    agent_before = hashlib.sha256(sandbox.agent_path().read_bytes()).hexdigest()
    head_before = git(repo, "rev-parse", "HEAD").stdout

    def reply(req: dict[str, Any]) -> Reply:
        name = re.search(r"properties for victim\.(\w+)", json.dumps(req)).group(1)  # type: ignore[union-attr]
        code = ESCAPES[name].replace("{marker}", str(marker)).replace("{port}", str(model.port))
        code = code.replace("{{", "{").replace("}}", "}")
        return Reply(body=completion(f"Here you go:\n```python\n{code}```\n"))

    model = fake_model(reply)
    proc = gate(repo, "draft-props", "--drafter", "openai", "--target", "victim", "--triage-timeout", "5",
                "--json", env=model_env(model), check=0)
    report = json.loads(proc.stdout)
    # Queued with a failing triage, or not queued because it did not run: the witness says why.
    triage = {q["target"].split(".")[1]: q["triage"] for q in report["queued"]}
    triage.update({r["target"].split(".")[1]: {"result": "not queued", "witness": r["reason"]}
                   for r in report["rejected"]})
    assert set(triage) == set(ESCAPES), proc.stdout
    for name, result in triage.items():
        assert result["result"] in ("fail", "not queued"), (name, result)
        assert "DID " not in result["witness"], (name, result["witness"])
    assert triage["write_repo"]["witness"].count("refused") == 3
    assert triage["write_elsewhere"]["witness"].count("refused") == 6
    sock = triage["open_socket"]["witness"]
    assert "refused tcp host" in sock and "refused tcp internet" in sock and "refused dns" in sock
    # Triage runs in a container of its own, with no relay socket at all.
    assert "refused relay: FileNotFoundError" in sock
    assert report["relay_refused"] == []
    key = triage["read_key"]["witness"]
    assert "GATE_DRAFTER_API_KEY" not in key and "KEYLIKE=[]" in key
    assert "timeout" in triage["fork_bomb"]["witness"]
    assert "MemoryError" in triage["allocate"]["witness"]
    assert "timeout" in triage["loop_forever"]["witness"]
    disk = triage["fill_disk"]["witness"]
    assert "one file: [Errno 27] File too large" in disk  # the fsize ulimit
    assert "bytes: [Errno 28] No space left on device" in disk  # the tmpfs size
    files = re.search(r"files: (\d+) \[Errno 28\]", disk)  # the tmpfs inode count
    assert files is not None and int(files.group(1)) < 256, disk
    # Nothing written outside staging, and the key went nowhere but the model.
    assert not marker.exists()
    assert git(repo, "status", "--porcelain", "--ignored", "--", "src").stdout == ""
    assert git(repo, "rev-parse", "HEAD").stdout == head_before
    assert hashlib.sha256(sandbox.agent_path().read_bytes()).hexdigest() == agent_before
    assert "unexpected" not in report  # staging is the container's own tmpfs: nothing of it reaches the host
    everything = proc.stdout + proc.stderr + "".join(p.read_text() for p in (repo / ".gate").rglob("*") if p.is_file())
    assert KEY not in everything
    assert [r["path"] for r in model.requests] == ["/v1/chat/completions"] * len(ESCAPES)
    assert {r["auth"] for r in model.requests} == {f"Bearer {KEY}"}


# ---------------------------------------------------------------- INFRA and engine errors

INFRA = {
    "http_500": (Reply(status=500, body=b"{}"), "HTTP 500"),
    "empty": (Reply(body=b""), "empty body"),
    "malformed": (Reply(body=b'{"choices": "nope"}'), "malformed"),
    "slow": (Reply(body=completion("late"), delay_s=3), "timed out"),
}


@pytest.mark.parametrize("case", sorted(INFRA))
def test_channel_faults_stop_the_trial_and_queue_nothing(repo: Path, fake_model, case: str) -> None:  # noqa: F811
    text = (repo / "gate.yaml").read_text() + "drafter: {timeout_s: 1}\n"
    sign_and_commit(repo, {"gate.yaml": text})
    ledger = (repo / "freeze_ledger.yaml").read_bytes()
    answer, words = INFRA[case]
    model = fake_model(lambda req: answer)
    proc = gate(repo, "draft-props", "--drafter", "openai", env=model_env(model))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gate draft-props: infra: ") and words in lines[0]
    assert "nothing was queued" in lines[0]
    assert queue_metas(repo) == []
    assert (repo / "freeze_ledger.yaml").read_bytes() == ledger  # never a freeze
    assert len(model.requests) <= 3  # stopped at the first faulty job (with its bounded retries)


def test_missing_image_points_to_sandbox_build(repo: Path) -> None:
    text = (repo / "gate.yaml").read_text() + "drafter: {image: 'mergegate-sandbox:not-built'}\n"
    sign_and_commit(repo, {"gate.yaml": text})
    proc = gate(repo, "draft-props", check=2)
    assert proc.stderr.count("\n") == 1 and "mergegate-sandbox:not-built" in proc.stderr
    assert "gate sandbox build" in proc.stderr


def test_wall_clock_kills_the_container_and_removes_it(repo: Path, docker_engine: Any) -> None:
    commit(repo, {"src/slow.py": "import time\ntime.sleep(600)\n\ndef f(x: int) -> int:\n    return x\n"})
    proc = gate(repo, "draft-props", "--target", "slow", "--wall-clock", "4")
    assert proc.returncode == 3 and "wall clock" in proc.stderr and "nothing was queued" in proc.stderr
    assert queue_metas(repo) == []
    # Other tests may run sandboxes in parallel; but a container whose /repo export is gone
    # belongs to a finished run, and every finished run removes its container first.
    for box in docker_engine.containers.list(all=True, filters={"label": "mergegate.sandbox"}):
        sources = [m["Source"] for m in box.attrs["Mounts"] if m["Destination"] == "/repo"]
        assert all(Path(s).exists() for s in sources), f"leftover container {box.short_id}"


def test_doctor_passes_on_the_built_image(tmp_path: Path, docker_engine: Any) -> None:
    """The engine's image is the one ``sandbox/Dockerfile`` builds (.ci/setup-docker.sh: gate sandbox build)."""
    labels = docker_engine.images.get("mergegate-sandbox:latest").labels
    assert labels[image.DOCKERFILE_LABEL] == image.dockerfile_digest()
    assert labels[image.FORMAT_LABEL] == image.FORMAT
    proc = gate(tmp_path, "sandbox", "doctor", check=0)
    assert "FAIL" not in proc.stdout and "ok       network = False" in proc.stdout


# ---------------------------------------------------------------- gate sandbox build

def test_build_from_a_local_base_image_passes_doctor(tmp_path: Path, docker_engine: Any) -> None:
    tag = "mergegate-sandbox:test-from-base"
    try:
        out = gate(tmp_path, "sandbox", "build", "--base-image", "mergegate-sandbox:latest", "--image", tag,
                   check=0).stdout
        assert f"image    {tag} built from sandbox/Dockerfile on mergegate-sandbox:latest" in out
        doctor = gate(tmp_path, "sandbox", "doctor", "--image", tag, check=0).stdout
        assert "FAIL" not in doctor and "ok       uid = 10001" in doctor
        assert docker_engine.images.get(tag).labels[image.HYPOTHESIS_LABEL] == image.host_hypothesis()
        assert gate(tmp_path, "sandbox", "build", "--image", tag, "--if-missing", check=0).stdout.endswith("present\n")
    finally:
        docker_engine.images.remove(tag, force=True)


def test_an_image_of_another_hypothesis_is_rebuilt_not_kept() -> None:
    """``gate sandbox build --if-missing`` (``.ci/setup-docker.sh``) keeps an image only if a build now would make
    the same one: a Hypothesis release the host picked up since makes ``gate sandbox doctor`` fail (``deps``) on the
    old image, so it is rebuilt; an image from before the label says nothing of its Hypothesis and is rebuilt too."""
    now = {image.FORMAT_LABEL: image.FORMAT, image.DOCKERFILE_LABEL: image.dockerfile_digest(),
           image.HYPOTHESIS_LABEL: image.host_hypothesis()}
    assert image.current(now) is None
    older = {**now, image.HYPOTHESIS_LABEL: "6.0.0"}
    assert image.current(older) == f"built with Hypothesis 6.0.0, the host has {image.host_hypothesis()}"
    unlabelled = {k: v for k, v in now.items() if k != image.HYPOTHESIS_LABEL}
    assert "built with Hypothesis (unknown)" in str(image.current(unlabelled))
    assert image.current({**now, image.DOCKERFILE_LABEL: "0" * 64}) == "not built from this sandbox/Dockerfile"
    assert image.current({}) == "not built from this sandbox/Dockerfile"


def test_build_never_pulls_and_checks_its_sources(tmp_path: Path) -> None:
    proc = gate(tmp_path, "sandbox", "build", "--base-image", "no-such/base:1", "--image", "x:y", check=2)
    assert "not in the local engine" in proc.stderr and "nothing is pulled" in proc.stderr
    (tmp_path / "empty-rootfs").mkdir()
    proc = gate(tmp_path, "sandbox", "build", "--rootfs", str(tmp_path / "empty-rootfs"), "--image", "x:y", check=2)
    assert "has no usr/bin/python3" in proc.stderr


def test_leftover_containers_past_their_deadline_are_swept(tmp_path: Path, docker_engine: Any) -> None:
    """Every sandbox run sweeps too, so a test on another xdist worker may take the container first: then it
    is gone (swept) and this doctor could not name it; try again (a doctor that never names one still fails)."""
    for _attempt in range(4):
        stale = docker_engine.containers.create(
            "mergegate-sandbox:latest", ["python3", "-c", "pass"], network_mode="none",
            labels={"mergegate.sandbox": "1", "mergegate.deadline": "1"})
        try:
            out = gate(tmp_path, "sandbox", "doctor", check=0).stdout
            assert not docker_engine.containers.list(all=True, filters={"id": stale.id})  # swept, by some sweep
            if "leftover sandbox container" in out and stale.short_id in out:
                return
        finally:
            with __import__("contextlib").suppress(Exception):
                stale.remove(force=True)
    raise AssertionError(f"sandbox doctor never named the leftover container it swept:\n{out}")
