"""What production answered ahead of the caller: one guard for every fused request.

A fused request (``chains.py``: ``a.b.c``; ``iterated.py``: a call and its iterator; ``dictcopy.py``:
``dict(x)``) has the subject do, besides what the caller asked, what the caller's own bytecode shows it asks
next, with nothing of the caller's running between.  What came for that next step is kept as an ``Ahead``:
for which channel, which frame (by its id and code, never the frame itself), which instruction (the offset at
which the caller will ask: Python 3.11 may run a builtin's call at its ``PRECALL`` or at its ``CALL``, so one or
two), which stand-in (held weakly: nothing of production's or the property's is kept
alive by an answer left unread) and the channel's request count when it came.

It is given only to that frame at that instruction, for that very stand-in, while nothing else was asked of
the subject since (the request count is unchanged).  Anything else (another frame, a tracer that ran code
between, a request of any kind, the stand-in gone) and it is dropped: the step is asked of the subject, as it
would be with no fusion.  Production then met the same requests in the same order as in one process; what it
answered is decoded here as any reply.
"""

from __future__ import annotations

import weakref
from types import FrameType
from typing import Any


class Ahead:
    """One answer kept for the caller's next step: where and when it may be given, and the answer."""

    __slots__ = ("calls", "ch", "code", "frame", "lasti", "owner", "value")

    def __init__(self, ch: Any, frame: FrameType, lasti: int | tuple[int, ...], owner: Any, value: Any) -> None:
        self.ch, self.frame, self.code, self.calls = ch, id(frame), frame.f_code, ch.calls
        self.lasti = lasti if type(lasti) is tuple else (lasti,)
        self.owner = weakref.ref(owner)  # TypeError for a value that is no stand-in
        self.value = value

    def fits(self, ch: Any, owner: Any, frame: FrameType) -> bool:
        """Whether the step ``frame`` is making now, on ``owner``, is the one this answer came for."""
        return self.ch is ch and self.calls == ch.calls and self.frame == id(frame) and self.code is frame.f_code \
            and frame.f_lasti in self.lasti and self.owner() is owner


def keep(slot: list[Any], ch: Any, frame: FrameType, lasti: int | tuple[int, ...], owner: Any, value: Any) -> None:
    """Keep ``value`` in ``slot`` for the step at ``lasti`` (an offset, or the offsets it may run at) on ``owner``;
    an owner that is no stand-in keeps nothing (a subject that went on past plain data: what came is dropped)."""
    try:
        slot[0] = Ahead(ch, frame, lasti, owner, value)
    except TypeError:
        slot[0] = None


def take(slot: list[Any], ch: Any, owner: Any, frame: FrameType) -> Ahead | None:
    """The answer in ``slot`` when it is for this step (taken: given once); else None, and it is dropped."""
    now = slot[0]
    if now is None:  # (nearly always)
        return None
    slot[0] = None
    return now if now.fits(ch, owner, frame) else None


def fused_call(ch: Any, message: tuple[Any, ...]) -> tuple[Any, Any]:
    """A call fused with the caller's next step (``iterated.py``, ``compared.py``): the call's value, decoded, and
    what came for that step as the subject sent it (an ``ok`` or ``err`` entry), or None where nothing came."""
    reply = ch.exchange(message)
    if reply[0] != "ok":
        raise ch.error(reply, stop_allowed=False)
    if len(reply) != 3 or not (reply[2] is None or (type(reply[2]) is list and reply[2][:1] in (["ok"], ["err"]))):
        raise ch.error([f"malformed {message[0]} reply"])
    return ch.dec(reply[1]), reply[2]
