"""A rich progress bar on stderr while properties run (only on a TTY)."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager, nullcontext
from typing import Any


def progress_bar(quiet: bool = False) -> AbstractContextManager[Any]:
    """A context giving a ``runner.Progress`` callback, or None when stderr is not a terminal."""
    if quiet or not sys.stderr.isatty():
        return nullcontext(None)
    return _RichProgress()


class _RichProgress:
    """Advanced once per finished row; transient, so the table that follows stays clean."""

    def __enter__(self) -> Any:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.bar = Progress(TextColumn("running properties"), BarColumn(), MofNCompleteColumn(),
                            console=Console(stderr=True), transient=True)
        self.bar.__enter__()
        self.task = self.bar.add_task("rows", total=None)
        return self

    def begin(self, total: int) -> None:
        """Called by the runner with the number of rows it will produce (once per run)."""
        self.bar.update(self.task, total=(self.bar.tasks[0].total or 0) + total)

    def __call__(self, task: Any, row: Any) -> None:
        self.bar.advance(self.task)

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__(None, None, None)
