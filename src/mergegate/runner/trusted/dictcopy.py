"""``dict(x)`` of a production object: built by the subject in one request, the builtin's reads answered from it.

CPython's ``dict(x)`` reads ``x.keys`` (a mapping?), reads and calls it again, iterates what it returns and
reads ``x[k]`` for each key (else, with no ``keys``, iterates ``x`` for pairs): sealed, that was two reads, a
call, ``iter``, a batch and a request a key (bidict's ``dict(bi)``, thousands of times an example run). Where
the frame reading ``x.keys`` is executing a call of the builtin ``dict`` with one argument
(``consumers.consumer``), the subject does those same reads, calls and item reads, in that order, in one
request (``objects.op_dictof``), and sends the dict it built; the evaluator decodes it (its own ``hash`` and
``==`` rebuild it, production's keys kept apart where production kept them: ``protocol/mappings``) and answers
the builtin's next reads from it: the second ``keys`` read, then ``x[k]`` (or, with no ``keys``, ``iter(x)``).

Those answers are given only while nothing else was asked of the subject since (the channel's request count
is unchanged) and only to that frame at that instruction: a key of production's own that the builtin hashes
asks for its snapshot, and from then on each read is a request again, as before. What production computed is
production's answer either way; the subject hashing production's own keys to build its dict is production
answering for its own mapping, as a method of its that returned ``dict(self)`` would.
"""

from __future__ import annotations

from types import FrameType
from typing import Any

from mergegate.runner.trusted import answered
from mergegate.runner.trusted.faults import SealedCallError


class Copy(answered.Ahead):
    """One ``dict(x)`` call's copy (``answered.Ahead``: whose, where, when; ``value`` the dict), how building it
    failed, and the builtin's next step.  Unlike a one-step answer it serves the builtin's reads one after another,
    at the same instruction, while nothing else is asked."""

    __slots__ = ("failure", "served", "step")

    def __init__(self, ch: Any, handle: Any, frame: FrameType, data: dict[Any, Any], step: str,
                 failure: BaseException | None) -> None:
        super().__init__(ch, frame, frame.f_lasti, handle, data)
        self.step, self.failure, self.served = step, failure, 0

    def keys(self) -> list[Any]:
        if self.failure is not None:  # what production raised building it: dict() raises it from here
            NOW[0] = None
            raise self.failure
        return list(self.value)


NOW: list[Copy | None] = [None]  # the copy the builtin is reading, if any


def keys_read(ch: Any, handle: Any, frame: FrameType) -> Any:
    """``x.keys`` read by ``dict(x)``: the first read builds the copy (one request), the second is answered from it."""
    now = _current(ch, handle, frame, "probed")
    if now is not None:
        now.step = "listed"
        return now.keys
    reply = ch.exchange(("dictof", ch.enc(handle)))
    if reply[0] != "ok":  # production's error reading ``keys``: dict() raises it there too
        raise ch.error(reply, stop_allowed=False)
    failure = ch.error(reply[3], stop_allowed=False) if len(reply) == 4 and reply[3] is not None else None
    data = {} if failure is not None else ch.dec(reply[1]) if len(reply) == 4 else None
    if type(data) is not dict or type(reply[2]) is not bool or type(failure) is SealedCallError:
        raise SealedCallError(f"the subject sent a malformed dict: {str(reply)[:120]}")
    copy = NOW[0] = Copy(ch, handle, frame, data, "probed" if reply[2] else "pairs", failure)
    if copy.step == "pairs":
        raise AttributeError("keys")  # no keys: the builtin asks for the pairs next (``pairs``)
    return copy.keys


def item(ch: Any, handle: Any, frame: FrameType, key: Any) -> tuple[bool, Any]:
    """``x[key]`` read by the builtin after it listed the keys: (True, the copy's value), else (False, None)."""
    now = _current(ch, handle, frame, "listed")
    if now is None or key not in now.value:
        return False, None
    now.served += 1
    if now.served == len(now.value):  # every key read: the builtin is done with it
        NOW[0] = None
    return True, now.value[key]


def pairs(ch: Any, handle: Any, frame: FrameType) -> Any:
    """``iter(x)`` by the builtin when ``x`` has no ``keys``: the copy's pairs, or None (ask the subject)."""
    now = _current(ch, handle, frame, "pairs")
    if now is None:
        return None
    NOW[0] = None
    if now.failure is not None:
        raise now.failure
    return iter(list(now.value.items()))


def _current(ch: Any, handle: Any, frame: FrameType, step: str) -> Copy | None:
    now = NOW[0]
    if now is None:
        return None
    if now.calls != ch.calls:  # something else was asked since: never answered from it again
        NOW[0] = None
        return None
    return now if now.step == step and now.fits(ch, handle, frame) else None
