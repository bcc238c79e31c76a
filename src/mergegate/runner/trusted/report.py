"""What a failure says: the witness site in the oracle and Hypothesis's minimal counterexample."""

from __future__ import annotations


def assertion_site(exc: BaseException, oracle_path: str, rel: str) -> str:
    """``Type:oracle/file.py:LINE`` of the deepest oracle frame (or ``Type:rel``)."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == oracle_path:
            line = tb.tb_lineno
        tb = tb.tb_next
    kind = type(exc).__name__
    return f"{kind}:{rel}:{line}" if line is not None else f"{kind}:{rel}"


def counterexample(exc: BaseException) -> str:
    """Hypothesis's notes on the minimized failure: the arguments, plus any ``data()`` draws.

    All of them, so two failures that differ only in a draw do not share a signature;
    noise (addresses, timestamps, paths) is stripped later by ``signature.normalise``.
    """
    return "\n".join(notes(exc))


# Hypothesis's own words for the minimal failing example: "Falsifying example: ..." (and
# "Falsifying explicit example: ..."), "Failing test case: ..." in newer versions.
FALSIFYING = ("Falsifying example", "Falsifying explicit example", "Failing test case")


def notes(exc: BaseException) -> list[str]:
    """The notes attached to ``exc`` in this process (by Hypothesis or the oracle), from its own ``__dict__``.

    Never through ``getattr``: an exception production raised is a stand-in whose missing
    attributes are looked up on production's object, which could then write our notes.
    """
    try:
        own = object.__getattribute__(exc, "__dict__")
    except AttributeError:
        return []
    raw = own.get("__notes__") if type(own) is dict else None
    return [n for n in raw if type(n) is str] if type(raw) is list else []


def falsifying_example(exc: BaseException) -> str:
    """Hypothesis's report of the minimal failing example, as it wrote it, with the notes after it (draws)."""
    found = notes(exc)
    start = next((i for i, n in enumerate(found) if n.startswith(FALSIFYING)), None)
    return "" if start is None else "\n".join(found[start:])[:4000]
