"""Bench: ``next`` in a loop on production's own iterator class: sealed and guessed, a request each, one process.

A weighted round robin of production's (a class with ``__next__``, no generator: ``trusted/ahead.py`` cannot
read it ahead) drained ``--n`` times in a loop, as priority's ``period_of_repetition`` drains a
``PriorityTree``: in this process (the baseline), through a real subject with guesses (``trusted/guess.py``)
and through the same subject one request a ``next`` (guessing off, as before); on one core, as the gate pins
an evaluator and its subject.  Prints microseconds a ``next``, requests, and each sealed figure's ratio to
the baseline and to the other.

    .venv/bin/python bench/guess.py [--n 100000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from mergegate.runner.subject import sandbox
from mergegate.runner.trusted import guess, standins

WHEEL = '''
class Wheel:
    def __init__(self, weights):
        self.slots = [name for name, weight in weights for _ in range(weight)]
        self.i = 0
    def __iter__(self):
        return self
    def __next__(self):
        item = self.slots[self.i % len(self.slots)]
        self.i += 1
        return item
'''
WEIGHTS = [(1, 3), (3, 16), (5, 255), (1001, 7), (70001, 100)]


def sealed(path: str, n: int) -> tuple[float, int, list[int]]:
    ch = standins.Channel(path)
    ch.request("import", "wheel")
    collection = ch.endpoint
    ch.attach(ch.twin())  # a run's own twin, as the gate gives each run
    mod = ch.request("import", "wheel")
    wheel, before = mod.Wheel(WEIGHTS), ch.calls
    started = time.perf_counter()
    got = [next(wheel) for _ in range(n)]
    guess.settle(ch)
    took = time.perf_counter() - started
    calls = ch.calls - before
    for endpoint in (ch.endpoint, collection):
        if endpoint is not None:
            endpoint.close()
    return took, calls, got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    n = parser.parse_args().n
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core for both, as ``pool.pin`` runs them
    scope: dict[str, object] = {}
    exec(WHEEL, scope)  # the same class, in this process
    local = scope["Wheel"](WEIGHTS)  # type: ignore[operator]
    started = time.perf_counter()
    expected = [next(local) for _ in range(n)]
    base = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        (tree / "src").mkdir(parents=True)
        (tree / "src" / "wheel.py").write_text(WHEEL)
        (Path(tmp) / "scratch").mkdir()
        spec = sandbox.SubjectSpec(str(tree), (str(tree / "src"),), preload=("wheel",))
        subject = sandbox.Subject(spec, sandbox.choose("auto"), Path(tmp) / "scratch", "bench")
        try:
            guessed, guessed_calls, got = sealed(subject.socket_path, n)
            assert got == expected
            start, guess.START = guess.START, 10**12  # guessing off: one request a next
            try:
                single, single_calls, got = sealed(subject.socket_path, n)
            finally:
                guess.START = start
            assert got == expected
        finally:
            subject.close()
    print(f"{n} nexts of a production iterator class, containment {sandbox.choose('auto')}")
    print(f"  in one process:            {base / n * 1e6:8.2f} us a next")
    print(f"  sealed, guessed:           {guessed / n * 1e6:8.2f} us a next, {guessed_calls} requests "
          f"({guessed / base:.1f}x one process)")
    print(f"  sealed, a request a next:  {single / n * 1e6:8.2f} us a next, {single_calls} requests "
          f"({single / base:.1f}x one process)")
    print(f"  guessed / a request a next: {guessed / single:.3f} ({single / guessed:.1f}x faster)")


if __name__ == "__main__":
    main()
