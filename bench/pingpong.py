"""Bench: the floor under every sealed request, a round trip of the protocol's own framing with nothing behind it.

Two processes on a socket pair; one sends ``wire.Endpoint.request(["op", i, "x" * 20])``, the other answers
``["ok", i]`` at once: length-prefixed JSON both ways, as every sealed call, attribute read and operator does,
but no codec, no stand-ins and no production.  Measured with both processes on one core (as ``pool.pin`` runs an
evaluator and its subject) and on two; then raw bytes on the same socket pair, for the kernel's share.
Against it: what a real request costs (``bench/suite.py`` prints natsort's: about 110 us with production's work).

Then the floor under every sealed *run*: a fresh production process (``op_twin``: the subject forks itself) that
answers one framed request and exits, from a process of this bench's size and again after importing Hypothesis
and pytest (a larger production process forks and exits slower); both on one core, as a collector and its twin.

    .venv/bin/python bench/pingpong.py [--n 20000] [--against REV [--rounds 5]]

``--against REV``: this checkout against REV, one core, alternating for ``--rounds`` rounds, each round, the best
of each and their ratio: the framed round trip of each ``wire.py`` (REV's read with ``git show``, loaded beside
it as a package of its own), and a whole sealed request with nothing behind it, ``len(x)`` of a production object
(each tree's ``src`` in a process of its own, a subject without a sandbox).
"""

from __future__ import annotations

import argparse
import importlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from mergegate.runner.protocol import wire

ROOT = Path(__file__).resolve().parents[1]


def _pin(cpu: int | None) -> None:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})


def _forked(cpus: tuple[int | None, int | None], serve: Callable[[socket.socket], None]) -> tuple[socket.socket, int]:
    """A socket pair whose other end a child serves with ``serve`` (on ``cpus[1]``); this process on ``cpus[0]``."""
    a, b = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        a.close()
        _pin(cpus[1])
        serve(b)
        os._exit(0)
    b.close()
    _pin(cpus[0])
    return a, pid


def _echo(sock: socket.socket) -> None:
    while data := sock.recv(100):
        sock.sendall(data)


def framed(n: int, cpus: tuple[int | None, int | None], framing: ModuleType = wire) -> float:
    """Microseconds per framed request/reply (``framing``: a ``wire`` module, this checkout's by default)."""
    a, pid = _forked(cpus, lambda b: framing.Endpoint(b, lambda m: ["ok", m[1]]).serve())
    end = framing.Endpoint(a, lambda m: ["err", "no"])
    started = time.perf_counter()
    for i in range(n):
        end.request(["op", i, "x" * 20])
    took = time.perf_counter() - started
    end.close()
    os.waitpid(pid, 0)
    return took / n * 1e6


def raw(n: int, cpus: tuple[int | None, int | None]) -> float:
    """Microseconds per 30-byte send and echo, no framing."""
    a, pid = _forked(cpus, _echo)
    started = time.perf_counter()
    for _ in range(n):
        a.sendall(b"x" * 30)
        a.recv(100)
    took = time.perf_counter() - started
    a.close()
    os.waitpid(pid, 0)
    return took / n * 1e6


def twin(n: int, cpu: int) -> tuple[float, float]:
    """Microseconds of wall per forked process that answers one request and exits; this process's RSS in MB."""
    _pin(cpu)
    started = time.perf_counter()
    for i in range(n):
        a, pid = _forked((cpu, cpu), lambda b: wire.Endpoint(b, lambda m: ["ok", m[1]]).serve())
        end = wire.Endpoint(a, lambda m: ["err", "no"])
        end.request(["op", i, "x" * 20])
        end.close()
        os.waitpid(pid, 0)
    took = time.perf_counter() - started
    with open("/proc/self/statm") as statm:
        rss = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    return took / n * 1e6, rss


def wire_at(rev: str, folder: Path) -> ModuleType:
    """REV's ``wire.py``, with the protocol folder it imports, loaded as a package named ``wire_at_rev``."""
    package, where = folder / "wire_at_rev", "src/mergegate/runner/protocol"

    def git(*argv: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *argv], check=True, capture_output=True, text=True).stdout

    package.mkdir()
    for name in git("ls-tree", "--name-only", f"{rev}:{where}").split():
        if name.endswith(".py"):
            (package / name).write_text(git("show", f"{rev}:{where}/{name}"))
    sys.path.insert(0, str(folder))
    return importlib.import_module("wire_at_rev.wire")


SEALED_LEN = """
import os, sys, tempfile, time
from pathlib import Path
from mergegate.runner.subject import sandbox
from mergegate.runner.trusted import proxies, standins
folder = Path(tempfile.mkdtemp())
(folder / "tree" / "src").mkdir(parents=True)
(folder / "scratch").mkdir()
(folder / "tree" / "src" / "pm.py").write_text("class Box:\\n    def __len__(self):\\n        return 10\\n")
spec = sandbox.SubjectSpec(str(folder / "tree"), (str(folder / "tree" / "src"),), preload=("pm",))
subject = sandbox.Subject(spec, sandbox.choose("none"), folder / "scratch", "p")
os.sched_setaffinity(0, {int(sys.argv[2])})
mod = standins.Channel(subject.socket_path).request("import", "pm")
proxies.channel_of(mod)._share_core()
box, n = mod.Box(), int(sys.argv[1])
started = time.perf_counter()
for _ in range(n):
    len(box)
print((time.perf_counter() - started) / n * 1e6)
subject.close()
"""


def sealed_len(src: Path, n: int, cpu: int) -> float:
    """Microseconds per ``len(x)`` of a production object through ``src``'s gate: a whole sealed request (stand-in,
    codec, channel, framing, the subject's answer) with nothing of production's behind it; one core."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", SEALED_LEN, str(n), str(cpu)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(out.split()[-1])


def against(rev: str, n: int, rounds: int, cpu: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        theirs = wire_at(rev, Path(folder))
        tree = Path(folder) / "tree"
        tree.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
        for what, measure in (
                ("framed round trip", lambda mine: framed(n, (cpu, cpu), wire if mine else theirs)),
                ("sealed len(x)", lambda mine: sealed_len(ROOT / "src" if mine else tree / "src", n, cpu))):
            times: dict[str, list[float]] = {"this checkout": [], rev: []}
            for round_ in range(rounds):
                for mine in (True, False) if round_ % 2 == 0 else (False, True):
                    times["this checkout" if mine else rev].append(measure(mine))
            print(f"  {what}:")
            for label, values in times.items():
                print(f"    {label:14}: " + "  ".join(f"{v:6.1f}" for v in values) + f"   best {min(values):6.1f} us")
            ratio = min(times["this checkout"]) / min(times[rev])
            print(f"    ratio this checkout / {rev}: {ratio:.2f}x (best against best)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--against", metavar="REV", help="compare the framed round trip with REV's wire.py")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    if args.against:
        print(f"pingpong: one core, {args.n} requests a round; load {os.getloadavg()[0]:.2f}")
        against(args.against, args.n, args.rounds, cores[-1])
        return
    layouts: list[tuple[str, tuple[int | None, int | None]]] = [("one core", (cores[0], cores[0]))]
    if len(cores) > 1:
        layouts.append(("two cores", (cores[0], cores[1])))
    print(f"pingpong: {args.n} round trips each; Python {sys.version.split()[0]}; load {os.getloadavg()[0]:.2f}")
    for label, cpus in layouts:
        framed_us = framed(args.n, cpus)
        os.sched_setaffinity(0, set(cores))
        raw_us = raw(args.n, cpus)
        os.sched_setaffinity(0, set(cores))
        print(f"  {label:9}: framed request/reply {framed_us:6.1f} us   raw bytes {raw_us:6.1f} us")
    import gc

    for label in ("as started", "with hypothesis and pytest imported"):
        if label != "as started":
            import hypothesis  # noqa: F401
            import pytest  # noqa: F401
        gc.collect()
        gc.freeze()  # as the subject does before it forks
        us, rss = twin(max(1, args.n // 20), cores[0])
        os.sched_setaffinity(0, set(cores))
        print(f"  a fresh process per run ({label}, {rss:.0f} MB): fork, one request, exit: {us:6.0f} us")


if __name__ == "__main__":
    main()
