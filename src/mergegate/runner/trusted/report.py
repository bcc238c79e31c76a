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
    return "\n".join(str(n) for n in getattr(exc, "__notes__", None) or [])
