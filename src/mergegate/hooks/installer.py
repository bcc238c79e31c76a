"""Writing a git hook file: atomically, executable, and never over a hook mergegate did not write."""

from __future__ import annotations

from pathlib import Path

from mergegate.errors import UsageError
from mergegate.records.fsutil import atomic_write


def write_hook(path: Path, text: str, marker: str, force: bool, fix: str) -> None:
    """Write ``text`` (which carries ``marker``) to ``path``; a foreign hook is kept unless ``force``."""
    if path.exists() and not force and marker not in path.read_text(errors="replace"):
        raise UsageError(f"{path} exists and was not written by mergegate; it is not mergegate's to replace", fix)
    atomic_write(path, text.encode(), mode=0o755)
