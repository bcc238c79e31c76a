"""A loop of ``next`` on production's own iterator class: items guessed in a copy of the subject, then replayed.

``trusted/guess.py``, ``subject/guess.py``.  What must hold: the same items, ends and errors as one process,
in every interleaving with the object's other methods; production's process runs exactly the nexts the
property took (its state, its counters, the lines change coverage sees); a loop of thousands of nexts is a
few requests; whatever the guess cannot carry (an object, an error, a callback) is asked the usual way; a
replay that answers differently, or a malformed guess, fails the example.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mergegate.runner.subject import sandbox
from mergegate.runner.trusted import faults, guess, standins
from tests.helpers import production_subject

ROTOR = '''
RAN = []


class Rotor:
    """A scheduler: yields its streams in turn; ``block`` changes what it yields next (no generator)."""
    def __init__(self, streams, limit=None):
        self.streams, self.blocked, self.i, self.limit, self.ran = list(streams), set(), 0, limit, 0
    def __iter__(self):
        return self
    def __next__(self):
        RAN.append(self.i)
        self.ran += 1
        if self.limit is not None and self.ran > self.limit:
            raise StopIteration
        live = [s for s in self.streams if s not in self.blocked]
        if not live:
            raise LookupError("no unblocked streams")
        self.i += 1
        return live[(self.i - 1) % len(live)]
    def block(self, s):
        self.blocked.add(s)
    def unblock(self, s):
        self.blocked.discard(s)
'''

PRODUCTION = '''
import os
import sys
import threading
import time

sys.modules["_mergegate_subject_guess"].FIRST = 0.3  # a guesser's first item: 0.3 s here, not 5 (a test's patience)
''' + ROTOR + '''

def ran():
    return len(RAN)


def pid():
    return os.getpid()


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def drive(fn):
    """Calls the oracle back; says whether this process is still the one that called."""
    before = os.getpid()
    fn()
    return os.getpid() == before


def reset():
    RAN.clear()


class Boxes(Rotor):
    """Yields production objects (a guess cannot carry them)."""
    def __next__(self):
        return Box(super().__next__())


class Box:
    def __init__(self, n):
        self.n = n


class Mixed(Rotor):
    """Plain items first, then production objects: a guess stops where they start."""
    def __next__(self):
        item = super().__next__()
        return item if len(RAN) <= 30 else Box(item)


class Asking(Rotor):
    """Calls the oracle's callable for each item."""
    def __init__(self, streams, ask):
        super().__init__(streams)
        self.ask = ask
    def __next__(self):
        return self.ask(super().__next__())


class Slow(Rotor):
    """Its items after the 30th take 0.3 s each."""
    def __next__(self):
        if len(RAN) >= 30:
            import time
            time.sleep(0.3)
        return super().__next__()


class Stuck(Rotor):
    """Hangs in a copy of its process (as a copy forked while a thread held a lock would)."""
    def __init__(self, streams):
        super().__init__(streams)
        self.pid = os.getpid()
    def __next__(self):
        if os.getpid() != self.pid:
            time.sleep(3600)
        return super().__next__()


class Threaded(Rotor):
    """Production that started a thread: no copy of it is made."""
    def __init__(self, streams):
        super().__init__(streams)
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()


class NoFork(Rotor):
    """A process that cannot fork (as at its ``max_processes``)."""
    def __init__(self, streams):
        super().__init__(streams)
        def fork():
            raise BlockingIOError(11, "Resource temporarily unavailable")
        os.fork = fork


class Pids(Rotor):
    """Nondeterministic: its items say which process ran it."""
    def __next__(self):
        super().__next__()
        return os.getpid()
'''


@pytest.fixture(scope="module")
def subject(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Subject]:
    yield from production_subject(tmp_path_factory, "rotormod", PRODUCTION, "g")


@pytest.fixture
def channel(subject: sandbox.Subject) -> Iterator[standins.Channel]:
    """A run's connection: to a twin of a connection's process (each connection is a process of its own)."""
    ch = standins.Channel(subject.socket_path)
    ch.request("import", "rotormod")
    collection = ch.endpoint
    ch.attach(ch.twin())
    yield ch
    faults.REFUSED.clear()
    for endpoint in (ch.endpoint, collection):
        if endpoint is not None:
            endpoint.close()


_HERE: dict[str, Any] = {}
exec(ROTOR, _HERE)  # the same class in this process: what one process gives
Rotor: Any = _HERE["Rotor"]


def test_a_long_loop_is_a_few_requests_and_the_same_items(channel: standins.Channel) -> None:
    mod = channel.request("import", "rotormod")
    streams = [1, 3, 5, 1000, 70000]
    p, mine = mod.Rotor(streams), Rotor(streams)
    before = channel.calls
    got = [next(p) for _ in range(20_000)]
    assert got == [next(mine) for _ in range(20_000)]
    # 16 one at a time, then guesses of 64, 256, 1024 and 4096 (the rest): about 20 requests, not 20,000
    assert channel.calls - before < 40, channel.calls - before
    assert mod.ran() == 20_000  # production's process ran exactly the nexts taken (the replay), no more
    assert p.i == 20_000


def test_a_guesser_whose_every_item_was_taken_takes_the_process_over(channel: standins.Channel) -> None:
    """No replay then: the guesser ran exactly those nexts; it answers from then on, the process before it ends."""
    mod = channel.request("import", "rotormod")
    p, mine = mod.Rotor([1, 2, 3]), Rotor([1, 2, 3])
    first = mod.pid()
    assert [next(p) for _ in range(16 + 64)] == [next(mine) for _ in range(16 + 64)]  # the first guess, all taken
    second = mod.pid()  # the request after it: answered by the guesser
    assert second != first and mod.ran() == 80
    p.block(2), mine.block(2)
    assert [next(p) for _ in range(16 + 10)] == [next(mine) for _ in range(16 + 10)]  # 10 of 64 taken
    assert mod.pid() == second and mod.ran() == 106  # replayed: the same process
    deadline = time.monotonic() + 5
    while mod.alive(first) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not mod.alive(first)  # the process before it is gone


def test_no_guesser_takes_over_inside_a_callback(channel: standins.Channel) -> None:
    """Production waits in ``drive`` for the oracle's callable, which drains a production iterator: the guesser
    cannot take the place of a process in the middle of production's own call."""
    mod = channel.request("import", "rotormod")
    p, mine = mod.Rotor([1, 2]), Rotor([1, 2])
    seen: list[int] = []
    assert mod.drive(lambda: seen.extend(next(p) for _ in range(16 + 64))) is True
    assert seen == [next(mine) for _ in range(16 + 64)] and mod.ran() == 80


def test_other_methods_in_between_see_one_process(channel: standins.Channel) -> None:
    mod = channel.request("import", "rotormod")
    p, mine = mod.Rotor([1, 2, 3, 4]), Rotor([1, 2, 3, 4])
    for step in range(3000):
        which = step // 97 % 4 + 1
        if step % 97 == 50:
            p.block(which), mine.block(which)
        if step % 97 == 80:
            p.unblock(which), mine.unblock(which)
        assert next(p) == next(mine), step
    assert mod.ran() == 3000


def test_the_end_and_the_error_come_where_they_would(channel: standins.Channel) -> None:
    mod = channel.request("import", "rotormod")
    assert list(mod.Rotor([7, 8], limit=500)) == list(Rotor([7, 8], limit=500))
    assert mod.ran() == 501  # 500 items and the next that ended it
    mod.reset()
    p = mod.Rotor([7, 8])
    for _ in range(300):
        next(p)
    p.block(7), p.block(8)  # the guess after it would be an error: asked the usual way
    with pytest.raises(LookupError, match="no unblocked"):
        next(p)
    q = mod.Rotor([7])
    for _ in range(40):
        next(q)
    q.block(7)
    with pytest.raises(LookupError):
        for _ in range(100):
            next(q)


def test_what_a_guess_cannot_carry_is_asked_the_usual_way(channel: standins.Channel) -> None:
    mod = channel.request("import", "rotormod")
    boxes = mod.Boxes([1, 2, 3])
    assert [next(boxes).n for _ in range(200)] == [1, 2, 3] * 66 + [1, 2]
    mod.reset()
    mixed, mine = mod.Mixed([1, 2, 3]), Rotor([1, 2, 3])
    got = [next(mixed) for _ in range(60)]  # 16 one at a time, a guess of 14 (then an object), 30 one at a time
    assert [x if type(x) is int else x.n for x in got] == [next(mine) for _ in range(60)]
    assert [type(x) is int for x in got] == [True] * 30 + [False] * 30
    assert mod.ran() == 60
    asked: list[int] = []
    asking = mod.Asking([4, 5], lambda n: asked.append(n) or n * 10)
    assert [next(asking) for _ in range(200)] == [40, 50] * 100
    assert asked == [4, 5] * 100  # the oracle's callable ran once per item, in this process


def test_a_guesser_that_never_answers_no_fork_or_threads_are_asked_the_usual_way(
        channel: standins.Channel) -> None:
    mod = channel.request("import", "rotormod")
    stuck, mine = mod.Stuck([1, 2, 3]), Rotor([1, 2, 3])
    started = time.monotonic()
    assert [next(stuck) for _ in range(40)] == [next(mine) for _ in range(40)]
    assert time.monotonic() - started < 10  # two guesses, each given up after 0.3 s
    assert mod.ran() == 40
    nofork, mine = mod.NoFork([6, 7]), Rotor([6, 7])
    before = channel.calls
    assert [next(nofork) for _ in range(100)] == [next(mine) for _ in range(100)]
    assert channel.calls - before >= 100
    threaded, mine = mod.Threaded([4, 5]), Rotor([4, 5])
    before = channel.calls
    assert [next(threaded) for _ in range(100)] == [next(mine) for _ in range(100)]
    assert channel.calls - before >= 100  # a request each: no guess


def test_a_replay_that_answers_differently_fails_the_example(channel: standins.Channel) -> None:
    mod = channel.request("import", "rotormod")
    p = mod.Pids([1])
    first = [next(p) for _ in range(40)]  # 16 from the process itself, then a guess: its copy's pid
    assert len(set(first)) == 2
    with pytest.raises(faults.SealedCallError, match="did not end where the guess"):
        mod.ran()


LIES = [
    ["ok", '["v",1]\n["stop"]\n["v",2]', "stop"],  # items after the end
    ["ok", '["v",1]\n["v",2]', "full"],  # fewer than asked for, yet "full"
    ["ok", "\n".join(['["v",1]'] * 65), "full"],  # more than asked for
    ["ok", '["v",1', "halt"],  # not JSON
    ["ok", '["v",1],["v",2]]', "halt"],  # JSON that breaks out of its line
    ["ok", '{"v":1}', "halt"],  # not an outcome
    ["ok", '["stop"]', "full"],  # an end that is not said
    ["ok", [["v", 1]], "halt"],  # not lines
    ["ok", "", "maybe"],  # no such reason
    ["ok", '["v",1]'],  # too short
]


@pytest.mark.parametrize("lie", LIES, ids=range(len(LIES)))
def test_a_malformed_guess_is_refused(channel: standins.Channel, lie: list[Any]) -> None:
    mod = channel.request("import", "rotormod")
    p = mod.Rotor([1, 2])
    for _ in range(guess.START):
        next(p)
    channel.request("call", channel.enc(mod.reset), ["l"], ["d"])  # any request: the streak starts again
    for _ in range(guess.START):
        next(p)
    real = channel.exchange

    def lying(message: tuple[Any, ...], guessing: bool = False) -> list[Any]:
        return lie if message[0] == "guess" else real(message, guessing)

    channel.exchange = lying  # type: ignore[method-assign]
    with pytest.raises(faults.SealedCallError, match=r"malformed guess|could not guess"):
        next(p)


def test_the_guesser_is_killed_when_it_runs_on(channel: standins.Channel) -> None:
    """Later items that take long: the guess asked for 64 (19 s of them), it answers within its budget."""
    mod = channel.request("import", "rotormod")
    p = mod.Slow([1, 2])
    started = time.monotonic()
    assert [next(p) for _ in range(20)] == [1, 2] * 10
    assert time.monotonic() - started < 3, time.monotonic() - started
    assert mod.ran() == 20


# ---------------------------------------------------------------- end to end: a bug a long loop finds


WHEEL = '''\
class Wheel:
    """Weighted round robin: each name as often as its weight, in turn (an iterator class, no generator)."""

    def __init__(self):
        self.slots, self.i = [], 0

    def add(self, name, weight):
        self.slots.extend([name] * weight)

    def __iter__(self):
        return self

    def __next__(self):
        if not self.slots:
            raise LookupError("an empty wheel")
        item = self.slots[self.i % len(self.slots)]
        self.i += 1
        return item
'''

WHEEL_SUITE = '''\
from collections import Counter

from hypothesis import given, strategies as st

from wheel import Wheel

NAMES = st.lists(st.tuples(st.integers(1, 10**9), st.integers(1, 60)), unique_by=lambda x: x[0], min_size=1,
                 max_size=8)


@given(NAMES)
def test_period(names):
    wheel = Wheel()
    for name, weight in names:
        wheel.add(name, weight)
    period = sum(weight for _, weight in names)
    pattern = [next(wheel) for _ in range(period)]
    assert Counter(pattern) == {name: weight for name, weight in names}
    for i in range(period * 20):
        assert next(wheel) == pattern[i % period], i
'''

# A refactor of the lines only ``next`` runs: the check must see them run (the replay), so it is an admit
REWRITTEN = WHEEL.replace('''        item = self.slots[self.i % len(self.slots)]
        self.i += 1
        return item''', '''        here = self.i % len(self.slots)
        self.i += 1
        return self.slots[here]''')
# The bug: the 700th item skips one slot (only a loop that long sees it)
SKIPPING = WHEEL.replace("        self.i += 1\n", "        self.i += 2 if self.i == 700 else 1\n")


def _wheel_repo(where: Path) -> Path:
    from tests.helpers import init_repo, sign_and_commit

    repo = init_repo(where)
    sign_and_commit(repo, {
        "src/wheel.py": WHEEL,
        "oracles/properties/test_wheel.py": WHEEL_SUITE,
        "oracles/catalog/claimed.yaml": "claimed: [prop.period]\n",
        "oracles/catalog/prop.period.yaml": 'id: prop.period\noracle: oracles/properties/test_wheel.py::test_period\n'
                                            'claim: "a period"\nmax_examples: 40\ncovers: ["src/wheel.py"]\n',
    }, "wheel")
    return repo


def test_a_bug_deep_in_a_long_loop_is_rejected_and_a_refactor_admitted(tmp_path_factory: pytest.TempPathFactory,
                                                                        bwrap_works: bool) -> None:
    from tests.test_sealed_attacks import agent_head, assert_admitted, assert_rejected, check

    repo = _wheel_repo(tmp_path_factory.mktemp("wheel") / "repo")
    assert REWRITTEN != WHEEL and SKIPPING != WHEEL
    started = time.monotonic()
    res = check(repo, agent_head(repo, "refactor", {"src/wheel.py": REWRITTEN}))
    assert_admitted(res)  # not review (unexercised_change): the lines ``next`` ran in the replay were seen
    assert time.monotonic() - started < 120
    calls = [r.get("production_calls") for r in res.head_rows()]
    assert all(type(c) is int and c < 20_000 for c in calls), calls  # far fewer requests than nexts
    assert_rejected(check(repo, agent_head(repo, "skipping", {"src/wheel.py": SKIPPING})), "prop.period")


# The bug, and a subject that ends each long guess early (a StopIteration where the wrong item would come), and
# says "ok" to every replay: the property meets an iterator that ended, and fails on its own.
ENDING = SKIPPING + '''

import sys as _sys

_server = _sys.modules["__main__"]
_guess = _server.OPS["guess"]


def _short(s, target, owed, count):
    reply = _guess(s, target, 0, count)
    if count >= 256:
        return ["ok", reply[1][:10] + [["stop"]], "stop"]
    return reply


_server.OPS["guess"] = _short
_server.OPS["replay"] = lambda s, owed: ["ok", None]
'''


def test_a_patch_that_edits_its_guesses_to_hide_a_wrong_item_is_rejected(tmp_path_factory: pytest.TempPathFactory,
                                                                         bwrap_works: bool) -> None:
    from tests.test_sealed_attacks import agent_head, assert_rejected, check

    repo = _wheel_repo(tmp_path_factory.mktemp("ending") / "repo")
    res = check(repo, agent_head(repo, "ending", {"src/wheel.py": ENDING}))
    assert_rejected(res, "prop.period")


# The bug, and a guesser that writes reply frames of its own onto the run's socket (it holds a copy of it): a reply
# ending the iteration where the bug would show, before the subject's own reply, which then answers the next request.
FORGING = SKIPPING.replace('''    def __next__(self):
''', '''    def __next__(self):
        import os
        if os.getpid() != self.pid and not getattr(self, "forged", False):
            self.forged = True
            _forge()
''').replace('''        self.slots, self.i = [], 0
''', '''        import os
        self.slots, self.i, self.pid = [], 0, os.getpid()
''') + '''

def _forge():
    import gc
    import json
    frame = json.dumps(["ok", '["v", 1]\\n["stop"]', "stop"]).encode()
    for obj in gc.get_objects():
        if type(obj).__name__ == "Endpoint" and hasattr(obj, "sock"):
            try:
                obj.sock.sendall(len(frame).to_bytes(4, "big") + frame)
            except OSError:
                pass
'''


def test_a_guesser_that_forges_reply_frames_on_the_socket_is_rejected(tmp_path_factory: pytest.TempPathFactory,
                                                                      bwrap_works: bool) -> None:
    from tests.test_sealed_attacks import agent_head, assert_rejected, check

    assert "_forge()" in FORGING and "self.pid = " in FORGING.replace("self.i, self.pid", "self.pid")
    repo = _wheel_repo(tmp_path_factory.mktemp("forging") / "repo")
    assert_rejected(check(repo, agent_head(repo, "forging", {"src/wheel.py": FORGING})), "prop.period")
