"""A collector's runs in its own process: each against a fresh twin, nothing of one run's production kept.

The trusted side may run many properties and seeds of one oracle file in one process, as pytest
does; what must stay fresh is production's side: each run talks to a twin of the collection's
subject process (``subject/server.py`` ``op_twin``), which knows the objects collection made and
nothing any earlier run made.  So, around each run, the channel is put back as collection left it:

- its connection: the twin's for the run, the collection's again afterwards (the twin is closed);
- the handles the run met: dropped from the channel; a stand-in made for a production class or module
  is found again by its name in the twin of the next run that uses it (``Rebound``), any other is
  dead from then on (any use is a ``SealedCallError`` naming the cause), so a production object an
  oracle cache kept from an earlier run can never name another object in a later twin;
- what the channel learned (oracle classes mirrored into the subject, ``issubclass`` answers, the
  named plain values of ``protocol/identity.py``): as collection left it;
- the production modules, and the oracle tree's own modules, first imported during the run: gone
  from ``sys.modules``, so the next run imports them again through its own twin.

What a property observes is unchanged: the same collection state on both sides, a fresh production
process, its own seed.  What the trusted side keeps between runs is the trusted side's (Hypothesis,
pytest, the oracle's module globals), as in a pytest session.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from mergegate.runner.protocol import codec, identity
from mergegate.runner.trusted import guess
from mergegate.runner.trusted.faults import SealedCallError
from mergegate.runner.trusted.proxies import RemoteModule, RemoteType, remote_id

WHY = ("a production object from an earlier run of this oracle file (oracle code kept it across runs: a "
       "module-level cache or strategy); each run meets a fresh production process: make it inside the test, or "
       "mark the entry isolation: shared")


class Earlier:
    """The link of a stand-in from an earlier run: every use is refused."""

    why = WHY  # what ``Channel._ref`` says when one is passed to production

    def __getattr__(self, name: str) -> Any:
        raise SealedCallError(WHY)


EARLIER = Earlier()


class Rebound:
    """The link of a production class or module from an earlier run, found again by name in this run's twin.

    A class or module reachable by its module and qualified name (``Point`` of ``geo``, met in a run through a
    signature's annotations and kept in a module-level ``st.builds(Line)``) is the same name in every twin:
    at its first use in a later run it is looked up there, and the stand-in the oracle holds stands for what
    that name is now (production's answer, as any attribute read).  What cannot be found so is refused.
    """

    def __init__(self, channel: Any, proxy: Any, module: str, qualname: str) -> None:
        self.channel, self.proxy, self.module, self.qualname = channel, proxy, module, qualname

    def bind(self, _obj: Any = None) -> tuple[Any, int]:
        ch, proxy = self.channel, self.proxy
        try:
            found = ch.request("import", self.module)
            for part in self.qualname.split(".") if self.qualname else ():
                found = getattr(found, part)
        except Exception:
            raise SealedCallError(WHY) from None
        ref: Any = remote_id(found)
        if ref is None or ref[0] is not ch or type(found) is not type(proxy):
            raise SealedCallError(WHY)
        ch.proxies[ref[1]] = proxy  # its replies name the stand-in the oracle holds
        _point(proxy, (ch, ref[1]))
        return (ch, ref[1])

    def __getattr__(self, name: str) -> Any:
        self.bind()
        return getattr(self.channel, name)


@dataclass
class Saved:
    """The channel as collection left it."""

    endpoint: Any
    same: identity.Identity
    proxies: frozenset[int]
    mirrors: dict[int, Any]
    mirrored: dict[int, Any]
    subclasses: dict[tuple[int, int], bool]
    modules: frozenset[str]
    root: str


def enter(channel: Any, fd: int | None, trusted_root: str) -> Saved:
    """Run the next job here, against the twin on ``fd`` (None: collection never connected; the run connects
    afresh on first use)."""
    saved = Saved(channel.endpoint, codec.SAME, frozenset(channel.proxies), dict(channel.mirrors),
                  dict(channel.mirrored), dict(channel.subclasses), frozenset(sys.modules),
                  trusted_root.rstrip("/") + "/")
    codec.SAME = saved.same.copy()
    channel.attach(fd)
    return saved


def leave(channel: Any, saved: Saved) -> None:
    """Put the channel back as collection left it (module docstring)."""
    if channel.endpoint is not None and channel.endpoint is not saved.endpoint:
        channel.endpoint.close()
    channel.endpoint = saved.endpoint
    channel.members.clear()  # read from the run's twin: collection's process may hold other objects
    channel.guessing = guess.Guessing()  # the twin's guess (collection's was settled before the twin was made)
    codec.SAME = saved.same
    for number in [n for n in channel.proxies if n not in saved.proxies]:
        _retire(channel, channel.proxies.pop(number))
    channel.mirrors, channel.mirrored, channel.subclasses = saved.mirrors, saved.mirrored, saved.subclasses
    channel.sticky.clear()
    for name in [n for n in sys.modules if n not in saved.modules]:
        module = sys.modules[name]
        if type(module) is RemoteModule or str(getattr(module, "__file__", None) or "").startswith(saved.root):
            del sys.modules[name]
            parent, _, child = name.rpartition(".")  # the import system set it on its parent module too
            holder = sys.modules.get(parent) if parent else None
            if holder is not None and vars(holder).get(child) is module:
                delattr(holder, child)


def _retire(channel: Any, proxy: Any) -> None:
    """A stand-in of the run that ended: found again by name in a later run (a class, a module), or dead."""
    link: Any = EARLIER
    if type(proxy) is RemoteType:
        module, qualname = type.__getattribute__(proxy, "__module__"), type.__getattribute__(proxy, "__qualname__")
        if type(module) is str and type(qualname) is str and "<" not in qualname:
            link = Rebound(channel, proxy, module, qualname)
    elif type(proxy) is RemoteModule:
        link = Rebound(channel, proxy, proxy.__name__, "")
    _point(proxy, (link, -1))


def _point(proxy: Any, ref: tuple[Any, int]) -> None:
    if type(proxy) is RemoteType:
        type.__setattr__(proxy, "_gate_ref", ref)
    else:
        object.__setattr__(proxy, "_gate_ref", ref)
