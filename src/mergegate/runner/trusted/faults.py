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
    """A value cannot cross the boundary, or the protocol broke; the message names the fix."""


class SubjectGone(BaseException):
    """The subject process ended (or could not be reached): the run ends here, as a crash.

    A BaseException, so Hypothesis stops at once instead of replaying examples
    against a process that no longer exists; the evaluator reports ``Crash:subject``.
    """
