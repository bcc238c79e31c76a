"""What the trusted side raises when production, or the channel to it, fails."""

from __future__ import annotations

from typing import Any


class ProductionError(Exception):
    """Production code raised an exception that is not a builtin one (its type is in ``remote_type``)."""

    remote_type = "?"

    def __getattr__(self, name: str) -> Any:
        obj = self.__dict__.get("_gate_obj")
        if obj is None or name.startswith("_gate"):
            raise AttributeError(name)
        return getattr(obj, name)


class ProductionImportError(ImportError):
    """A production module failed to import in the subject: production's failure, not the oracle's."""


class ProductionModuleNotFound(ProductionImportError, ModuleNotFoundError):
    """The subject has no such module (``mypkg._speedups`` not built here): ``pytest.importorskip`` skips, as in
    one process (a test the base ran and the head skips still fails, ``narrowed``)."""


class SealedCallError(TypeError):
    """A value cannot cross the boundary, or the protocol broke; the message names the fix.

    A ``TypeError``, as Python's own refusals are, so the property's error reads naturally; but a refusal is
    the gate's, never an answer of production's: each one made is kept (``REFUSED``) until the gate handles it
    itself (``handled``), and an example or test that completes with one unhandled fails with it
    (``session.GatePlugin``).  A property's ``pytest.raises(TypeError)`` or ``except Exception`` cannot take a
    value the gate refused to copy, or a comparison it refused to decide, for production's ``TypeError``.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        if len(REFUSED) < 64:
            REFUSED.append(self)


REFUSED: list[SealedCallError] = []  # refusals made since the current example or test began, not yet handled


def handled(exc: BaseException) -> None:
    """The gate caught ``exc`` itself and went on another way: it never reached the property."""
    for i, made in enumerate(REFUSED):
        if made is exc:
            del REFUSED[i]
            return


def went_on() -> SealedCallError | None:
    """The first refusal the example or test just completed went on past (it caught it), or None."""
    if not REFUSED:
        return None
    exc = SealedCallError(f"the test went on after the gate refused (it caught the refusal): {REFUSED[0]}")
    REFUSED.clear()  # this one too: it ends the example
    return exc


class SubjectGone(BaseException):
    """The subject process ended (or could not be reached): the run ends here, as a crash.

    A BaseException, so Hypothesis stops at once instead of replaying examples
    against a process that no longer exists; the evaluator reports ``Crash:subject``.
    """
