"""Evidence packets written whole: a temporary folder renamed into place, sealed by ``packet.json``.

``packet.json`` lists the sha256 of every file in the packet and the contract
hash.  A reader (``verify``) refuses a packet whose files do not match it, whose
``decision.json`` names another contract than ``contract.json``, or that has a
``decision.json`` but no seal (a packet from before this format, or torn).
A kill -9 leaves either the old packet, no packet, or the new one, never a mix:
the new folder is complete before the rename, and a stale temporary folder is
swept by the next writer.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from mergegate.errors import ConfigError
from mergegate.records import fsutil

SEAL = "packet.json"
VERSION = 1
_TMP, _OLD = ".tmp-", ".old-"
KNOWN = frozenset({SEAL, "contract.json", "fixture.digest", "oracle_edited.json", "base.jsonl", "patch.jsonl",
                   "decision.json", "summary.md", "coverage.json"})


def write(directory: str | Path, fill: Callable[[Path], None]) -> Path:
    """``fill(tmp)`` writes the files into a fresh folder; sealed, then renamed to ``directory`` whole."""
    target = Path(directory).absolute()
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep(target)
    _replaceable(target)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}{_TMP}{os.getpid()}-"))
    try:
        fill(tmp)
        fsutil.atomic_write(tmp / SEAL, _seal(tmp))
        _swap(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _replaceable(target: Path) -> None:
    """Only a packet (or an empty folder) is replaced whole: never a folder of someone's files."""
    if not target.exists():
        return
    if not target.is_dir() or target.is_symlink():
        raise ConfigError(str(target), None, "is not a folder", "pass a new or empty folder for the evidence")
    strangers = sorted(p.name for p in target.iterdir() if p.name not in KNOWN or not p.is_file())
    if strangers:
        raise ConfigError(str(target), None, f"holds {strangers[0]!r}, which is not part of an evidence packet",
                          "pass a new or empty folder for the evidence")


def _seal(folder: Path) -> bytes:
    files = {p.name: _sha(p) for p in sorted(folder.iterdir()) if p.is_file() and p.name != SEAL}
    data = {"version": VERSION, "files": files, "contract_hash": _contract_hash(folder)}
    return json.dumps(data, indent=2, sort_keys=True).encode() + b"\n"


def _swap(tmp: Path, target: Path) -> None:
    old = None
    if target.exists() or target.is_symlink():
        old = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}{_OLD}"))
        os.replace(target, old / "packet")
    os.replace(tmp, target)
    fsutil._fsync_dir(target.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def sweep(target: Path) -> None:
    """Remove what a killed writer of ``target`` left: its temporary folder; restore a packet moved aside."""
    if not target.parent.is_dir():
        return
    for stale in target.parent.glob(f".{target.name}{_TMP}*"):
        pid = stale.name[len(f".{target.name}{_TMP}"):].split("-", 1)[0]
        if not (pid.isdigit() and fsutil.pid_alive(int(pid))):
            shutil.rmtree(stale, ignore_errors=True)
    for aside in target.parent.glob(f".{target.name}{_OLD}*"):
        if not target.exists() and (aside / "packet").is_dir():
            os.replace(aside / "packet", target)  # killed between the two renames: the old packet is whole
        shutil.rmtree(aside, ignore_errors=True)


def verify(directory: str | Path) -> None:
    """A ConfigError unless ``directory`` is one whole packet (or a hand-made folder with no decision)."""
    folder = Path(directory)
    seal_path = folder / SEAL
    if not seal_path.is_file():
        if (folder / "decision.json").exists():
            raise ConfigError(str(folder), None, f"an evidence packet without its {SEAL} (torn or mixed)",
                              "run the check again; it writes a whole packet")
        return
    try:
        seal = json.loads(seal_path.read_bytes())
        files = seal["files"]
        if not isinstance(files, dict):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        raise ConfigError(str(seal_path), None, "not a packet seal", "run the check again") from None
    present = {p.name for p in folder.iterdir() if p.is_file() and p.name != SEAL}
    for name in sorted(present | set(files)):
        if name not in files or name not in present or _sha(folder / name) != files[name]:
            raise ConfigError(str(folder / name), None, "does not match the packet's seal (a mixed packet)",
                              "run the check again; never copy files between packets")
    found, named = _contract_hash(folder), _named_contract(folder)
    if seal.get("contract_hash") != found or (named is not None and named != found):
        raise ConfigError(str(folder / "decision.json"), None, "names another contract than contract.json",
                          "run the check again; never copy files between packets")


def _contract_hash(folder: Path) -> str | None:
    """The hash of contract.json (None without one)."""
    from mergegate.pipeline import diffrun

    path = folder / "contract.json"
    if not path.is_file():
        return None
    try:
        return diffrun.contract_hash(json.loads(path.read_bytes()))
    except ValueError:
        raise ConfigError(str(path), None, "not JSON", "run the check again") from None


def _named_contract(folder: Path) -> object:
    """The contract hash decision.json names (None without a decision)."""
    path = folder / "decision.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_bytes())
    except ValueError:
        raise ConfigError(str(path), None, "not JSON", "run the check again") from None
    return data.get("contract_hash") if isinstance(data, dict) else data


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
