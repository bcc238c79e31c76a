"""One exception root; `main` maps it to exit codes at the edge.

Exit codes (DESIGN.md): 0 passed, 1 the gate said no, 2 usage or configuration
error, 3 internal error (fail closed, never a pass).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_NO = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3


class GateError(Exception):
    """Root of every error mergegate raises on purpose."""

    exit_code = EXIT_INTERNAL

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def render(self) -> str:
        """The one line printed to stderr (a message quoting a tool's several lines is joined)."""
        text = f"{self.message}; fix: {self.fix}" if self.fix else self.message
        return " ".join(text.split()) if "\n" in text or "\r" in text else text


class UsageError(GateError):
    """Bad arguments or a repository that is not set up: exit 2."""

    exit_code = EXIT_USAGE


class ConfigError(UsageError):
    """A file the gate reads is malformed: names the file, the line and the fix."""

    def __init__(self, source: str, line: int | None, message: str, fix: str) -> None:
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {message}", fix)
        self.source = source
        self.line = line


class InternalError(GateError):
    """Something broke inside the gate or a tool it drives: exit 3, fail closed."""

    exit_code = EXIT_INTERNAL
