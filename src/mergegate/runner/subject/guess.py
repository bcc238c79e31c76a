"""A production iterator's next items guessed in a copy of this process; then the copy takes over, or this
process replays what was taken.

Loaded by ``server.py`` by path; standard library only, and as untrusted as the rest of the subject
(``trusted/guess.py`` says why nothing of the verdict rests on it).  A loop that calls ``next`` on an
object of production's own class (``PriorityTree``: no generator, so ``objects.op_ahead`` cannot read it
ahead: other methods change what it yields) was a round trip per item.  ``guess``: this process forks a
guesser, a copy of itself, that runs ``next`` up to ``count`` times and writes each outcome as a line;
this process never ran them and answers with those outcomes.  At the next ``replay`` or ``guess`` (its
``owed``: how many outcomes the evaluator took):

- all of them: the guesser ran exactly those, so it *takes over*: this process hands it that request
  (a line on their socket pair), the guesser says it is ready (having stopped dying with this process),
  is told to go, and raises ``TakeOver`` up to the twin's loop (``server.op_twin``), which answers the
  request and serves the socket from then on; this process exits.  Only between two requests of a
  twin's own loop, never while production waits inside a call of its own (a callback);
- fewer: the guesser ends, and this process runs ``next`` as many times as were taken, each outcome
  checked to be the guesser's, encoded the same.

Either way production's process ends in the very state one process would be in.  The guesser stops
before anything it cannot do alone: an item that is not plain data (a handle would name an object of
the guesser's table), an exception other than ``StopIteration``, production calling the evaluator back
(``NoPeer``); the evaluator asks for that item the usual way.  No guess is made in a process where
production started threads (the copy would hold only this one).  The guesser writes its first outcome
at once (the evaluator is waiting for it; within ``FIRST`` seconds, or the guess is empty), later ones
for at most ``BUDGET`` seconds more; then, still at work, it is killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import sys
import time
from typing import Any

Session = Any

BUDGET = 0.5  # seconds the guesser may run on after its first outcome
FIRST = 5.0  # seconds its first outcome may take: a copy stuck where this process would not be (a lock a thread
# of production's held when it forked) costs that long, then the evaluator asks for the item the usual way
MOST = 4096  # outcomes one guess may ask for
_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


class Halt(BaseException):
    """The guesser needed the evaluator (a callback, an oracle object's method): it stops before this item."""


class NoPeer:
    """The guesser's endpoint: it shares the evaluator's socket with this process, so it never uses it."""

    used = False

    def request(self, message: Any) -> Any:
        NoPeer.used = True
        raise Halt("a guess cannot call the evaluator")

    def close(self) -> None:
        pass


class NotPlain(Exception):
    pass


def _refuse(obj: Any) -> Any:
    raise NotPlain(type(obj).__qualname__)


def outcome(s: Session, it: Any) -> str | None:
    """One ``next(it)`` as the line the guesser writes and a replay compares; None: not one a guess can carry."""
    try:
        value = next(it)
    except StopIteration:
        return '["stop"]'
    except BaseException:  # a Halt, or production's error: raised where the evaluator asks for it itself
        return None
    if NoPeer.used:  # production caught the Halt and went on
        return None
    try:
        data = s.codec.encode_call([value], None, _refuse)[0][1]  # a value this side was given comes back as itself
    except NotPlain:
        return None
    return str(_JSON.encode(["v", data]))


def _guesser(s: Session, it: Any, count: int, out: int) -> int:
    """Writes the first outcome at once (the evaluator waits for it), later ones in chunks (a write a line
    would cost more than the line); returns how many it wrote."""
    chunk: list[str] = []
    flushed, written = time.monotonic(), 0
    for number in range(count):
        line = outcome(s, it)
        if line is None:
            break
        chunk.append(line)
        written += 1
        if line == '["stop"]':
            break
        if number == 0 or len(chunk) >= 512 or (number % 64 == 0 and time.monotonic() - flushed > 0.02):
            _write(out, chunk)
            flushed = time.monotonic()
    _write(out, chunk)
    return written


def _write(out: int, chunk: list[str]) -> None:
    data = "".join(line + "\n" for line in chunk).encode("utf-8", "surrogatepass")
    chunk.clear()
    while data:
        data = data[os.write(out, data):]


def _collect(fd: int, pid: int, count: int) -> list[str]:
    """The guesser's lines: the first within ``FIRST``, the rest within ``BUDGET`` more; a guesser still at work
    then is killed (one that wrote them all waits to be told whether it takes over)."""
    lines: list[str] = []
    pending, deadline, ended, waiting = b"", time.monotonic() + FIRST, False, True
    while len(lines) < count:
        wait = max(0.0, deadline - time.monotonic())
        if not select.select([fd], [], [], wait)[0]:
            break
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            ended = True
            break
        pending += chunk
        *whole, pending = pending.split(b"\n")
        lines.extend(w.decode("utf-8", "surrogatepass") for w in whole)
        if lines and waiting:
            deadline, waiting = time.monotonic() + BUDGET, False
    os.close(fd)
    if not ended and len(lines) < count:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return lines[:count]


class TakeOver(BaseException):
    """Raised in a guesser that takes its parent's place: the twin's loop (``server.op_twin``) answers
    ``message``, the request the parent read and handed over, then serves the socket as the parent did."""

    def __init__(self, message: list[Any]) -> None:
        super().__init__("take over")
        self.message = message


def op_guess(s: Session, target: Any, owed: Any, count: Any) -> list[Any]:
    """Replay what the last guess owes (or hand over to its guesser), then guess up to ``count`` outcomes of
    ``next(target)``."""
    _hand_over(s, ["guess", target, owed, count], owed)
    _replay(s, owed)
    it = s.dec(target)
    count = count if type(count) is int and 0 < count <= MOST else 1
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:  # a copy would hold only this thread
        return ["ok", "", "halt"]
    limits = sys.modules.get("_mergegate_subject_limits")
    arm = limits.death_signal() if limits is not None else (lambda: None)
    read, write = os.pipe()
    ours, theirs = socket.socketpair()
    try:
        pid = os.fork()
    except OSError:  # no process to spare (``max_processes``): the evaluator asks the usual way
        for fd in (read, write):
            os.close(fd)
        ours.close()
        theirs.close()
        return ["ok", "", "halt"]
    if pid == 0:
        _guesser_process(s, it, count, write, read, ours, theirs, arm)
    os.close(write)
    theirs.close()
    lines = _collect(read, pid, count)
    stopped = bool(lines) and lines[-1] == '["stop"]'
    why = "stop" if stopped else "full" if len(lines) == count else "halt"
    if why == "halt":  # the guesser ran past what it wrote (or was killed): it never takes over
        ours.close()
    s.guessed = (it, lines, ours if why != "halt" else None)
    return ["ok", "\n".join(lines), why]  # the guesser's lines as it wrote them: the evaluator parses them once


def _guesser_process(s: Session, it: Any, count: int, write: int, read: int, ours: Any, theirs: Any,
                     arm: Any) -> None:
    """The guesser: its outcomes, then, if its parent hands it the next request, its parent's place."""
    handed: Any = None
    written = 0
    try:
        arm()
        os.close(read)
        ours.close()
        endpoint, s.endpoint = s.endpoint, NoPeer()
        written = _guesser(s, it, count, write)
        os.close(write)
        message = b""
        while not message.endswith(b"\n") and (chunk := theirs.recv(1 << 16)):  # the request, a line; or
            message += chunk  # nothing (the parent replays, or went on)
        if message.endswith(b"\n"):
            _disarm()  # the parent exits once told this process is ready: it must not take this one with it
            theirs.sendall(b"A")
            if theirs.recv(1) == b"G":
                handed = json.loads(message)
        theirs.close()
    except BaseException:
        handed = None
    if handed is None:
        os._exit(0)
    s.endpoint, NoPeer.used, s.guessed = endpoint, False, Done(written)
    raise TakeOver(handed)


class Done:
    """What a guesser that took over owes: nothing, it ran the ``count`` nexts its outcomes say."""

    def __init__(self, count: int) -> None:
        self.count = count


def _disarm() -> None:
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, 0)  # PR_SET_PDEATHSIG: none


def _hand_over(s: Session, message: list[Any], owed: Any) -> None:
    """When the evaluator took every outcome the last guess sent, its guesser, which ran exactly those, takes
    this process's place (no replay): it answers ``message`` and serves from then on, and this process ends.
    Only between two requests of a twin's own loop (never inside a callback production is waiting on)."""
    guessed = s.guessed
    if guessed is None or type(guessed) is Done or guessed[2] is None:
        return
    it, lines, ctl = guessed
    s.guessed = (it, lines, None)
    if owed != len(lines) or not s.top or getattr(s.endpoint, "nesting", 1) != 0:
        ctl.close()  # the guesser ends; this process replays
        return
    try:
        ctl.sendall(json.dumps(message).encode("utf-8", "surrogatepass") + b"\n")
        ctl.settimeout(2.0)
        ready = ctl.recv(1) == b"A"
        if ready:
            ctl.sendall(b"G")
    except OSError:
        ready = False
    ctl.close()
    if ready:
        os._exit(0)  # the guesser answers this request and every later one


def op_replay(s: Session, owed: Any) -> list[Any]:
    _hand_over(s, ["replay", owed], owed)
    _replay(s, owed)
    return ["ok", None]


def _replay(s: Session, owed: Any) -> None:
    guessed, s.guessed = s.guessed, None
    if type(guessed) is tuple and guessed[2] is not None:
        guessed[2].close()  # its guesser ends
    if owed == 0:
        return
    if type(guessed) is Done:  # this is the guesser that took over: it ran them all already
        if owed != guessed.count:
            raise RuntimeError(f"the guess that took over ran {guessed.count} outcomes, not {owed!r}")
        return
    if guessed is None or type(owed) is not int or not 0 < owed <= len(guessed[1]):
        raise RuntimeError(f"nothing guessed to replay {owed!r} outcomes of")
    it, lines, _ctl = guessed
    for number, line in enumerate(lines[:owed]):
        mine = outcome(s, it)
        if mine != line:
            raise RuntimeError(f"next() answered its item {number} differently when run again in the subject "
                               f"({(mine or 'not an item a guess can carry')[:200]}, the guess said {line[:200]})")


OPS = {"guess": op_guess, "replay": op_replay}
