"""Evidence packets are whole: written to a temporary folder and renamed, sealed, and checked by every reader."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mergegate.demo import build
from mergegate.errors import ConfigError
from mergegate.pipeline import diffrun
from mergegate.records import packet
from tests.helpers import gate


def _files(tag: str, size: int = 64) -> dict[str, bytes]:
    contract = {"seeds": [1, 2], "base": tag}
    decision = {"contract_hash": diffrun.contract_hash(contract), "decision": tag}
    return {"contract.json": json.dumps(contract).encode(), "decision.json": json.dumps(decision).encode(),
            "base.jsonl": tag.encode() * size, "patch.jsonl": tag.encode() * size}


def _write(target: Path, files: dict[str, bytes]) -> Path:
    def fill(folder: Path) -> None:
        for name, data in files.items():
            (folder / name).write_bytes(data)

    return packet.write(target, fill)


def test_a_whole_packet_verifies(tmp_path: Path) -> None:
    out = _write(tmp_path / "ev", _files("a"))
    packet.verify(out)
    assert json.loads((out / packet.SEAL).read_text())["contract_hash"]
    _write(tmp_path / "ev", _files("b"))  # replaced whole
    packet.verify(out)
    assert json.loads((out / "decision.json").read_text())["decision"] == "b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ev"]  # nothing left beside it


@pytest.mark.parametrize("swap", ["contract.json", "decision.json", "patch.jsonl"])
def test_a_mixed_packet_is_refused(tmp_path: Path, swap: str) -> None:
    one, two = _write(tmp_path / "one", _files("a")), _write(tmp_path / "two", _files("b"))
    shutil.copy(two / swap, one / swap)
    with pytest.raises(ConfigError, match=r"mixed packet|another contract"):
        packet.verify(one)


def test_a_decision_naming_another_contract_is_refused_even_when_resealed(tmp_path: Path) -> None:
    files = _files("a")
    files["decision.json"] = json.dumps({"contract_hash": "0" * 64}).encode()
    out = _write(tmp_path / "ev", files)
    with pytest.raises(ConfigError, match="another contract"):
        packet.verify(out)


def test_a_packet_without_its_seal_is_refused(tmp_path: Path) -> None:
    out = _write(tmp_path / "ev", _files("a"))
    (out / packet.SEAL).unlink()
    with pytest.raises(ConfigError, match=r"without its packet\.json"):
        packet.verify(out)


def test_a_folder_of_other_files_is_never_replaced(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(ConfigError, match="not part of an evidence packet"):
        _write(tmp_path / "mine", _files("a"))
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


WRITER = """
import sys
from pathlib import Path
from mergegate.records import packet
from tests.test_packet import _files, _write
target = Path(sys.argv[1])
n = 0
while True:
    n += 1
    _write(target, _files(f"w{n}-", size=200_000))
"""


def test_kill_9_mid_write_leaves_no_packet_or_a_whole_one(tmp_path: Path) -> None:
    target = tmp_path / "ev"
    rng = random.Random(14)
    root = Path(__file__).resolve().parent.parent
    for trial in range(12):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], cwd=root,
                                env={**os.environ, "PYTHONPATH": str(root)})
        time.sleep(0.25 + rng.random() * 0.4)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if target.exists():
            packet.verify(target)  # never torn, never mixed
        if trial % 4 == 3:  # the next run succeeds and sweeps what the killed one left
            _write(target, _files("next"))
            packet.verify(target)
            assert sorted(p.name for p in tmp_path.iterdir()) == ["ev"]


def test_two_bases_keep_two_packets_and_verdict_refuses_a_mix(tmp_path: Path) -> None:
    repo = build.build(tmp_path / "demo")
    build.git(repo, "checkout", "-q", "-b", "base2", "main")
    base2 = build.commit(repo, {"README.md": "shop\n"}, "docs")
    head = build.commit(repo, {"src/shop/orders.py": (repo / "src/shop/orders.py").read_text() + "\n# x\n"},
                        "comment", agent=True)
    build.git(repo, "checkout", "-q", "main")
    wheres = []
    for base in ("main", base2):
        proc = gate(repo, "check", "--base", base, "--head", head, "--json")
        assert proc.returncode in (0, 1), proc.stderr
        wheres.append(Path(json.loads(proc.stdout)["evidence"]))
    one, two = wheres
    assert one != two and one.parent == two.parent
    for where in wheres:
        packet.verify(where)
        assert json.loads((where / "decision.json").read_text())["head"] == head
    ok = gate(repo, "verdict", "--evidence", str(one), "--json")
    assert ok.returncode in (0, 1), ok.stderr
    shutil.copy(two / "contract.json", one / "contract.json")
    mixed = gate(repo, "verdict", "--evidence", str(one), "--json")
    assert mixed.returncode == 2 and mixed.stderr.count("\n") == 1, mixed.stderr
    assert "contract.json" in mixed.stderr and "fix:" in mixed.stderr
