"""An aware ``datetime`` whose zone is a production object (dateutil's ``tz``): a real datetime here.

The codec carries such a datetime as its wall time, ``fold`` and a reference to the
zone (``["dtz", ...]``); the evaluator rebuilds a real ``datetime`` whose ``tzinfo`` is a
``Zone``: a subclass of ``datetime.tzinfo`` of this process whose ``utcoffset``, ``dst``
and ``tzname`` ask the production zone and accept only the types Python requires
(``timedelta`` or ``None``, ``str`` or ``None``).  The offsets are production's data, as
any value it returns; comparisons of the datetimes are Python's own.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from mergegate.runner.trusted.faults import SealedCallError


class Zone(dt.tzinfo):
    """A production ``tzinfo`` behind a handle; sent back to production as that handle."""

    __slots__ = ("handle",)

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def _ask(self, name: str, when: dt.datetime | None, kinds: tuple[type, ...]) -> Any:
        value = getattr(self.handle, name)(when)
        if value is not None and type(value) not in kinds:
            raise SealedCallError(f"production's tzinfo.{name}() returned a {type(value).__name__}, not "
                                  f"{' or '.join(k.__name__ for k in kinds)}")
        return value

    def utcoffset(self, when: dt.datetime | None) -> dt.timedelta | None:
        return self._ask("utcoffset", when, (dt.timedelta,))  # type: ignore[no-any-return]

    def dst(self, when: dt.datetime | None) -> dt.timedelta | None:
        return self._ask("dst", when, (dt.timedelta,))  # type: ignore[no-any-return]

    def tzname(self, when: dt.datetime | None) -> str | None:
        return self._ask("tzname", when, (str,))  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"<production tzinfo {self.handle!r}>"

    def __reduce__(self) -> Any:
        return (Zone, (self.handle,))
