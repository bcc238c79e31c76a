"""The README's command blocks, extracted from the file itself so a test can run them word for word."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def section(title: str) -> str:
    """The text of the ``## title`` section (up to the next heading of level 2)."""
    text = README.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def commands(title: str) -> list[str]:
    """The first ``sh`` block of a section: one command per line, trailing comments removed."""
    block = re.search(r"```sh\n(.*?)```", section(title), re.S)
    assert block, f"README.md: no sh block under '## {title}'"
    return [re.sub(r"\s+#(?![^'\"]*['\"]).*$", "", line).strip() for line in block.group(1).splitlines()
            if line.strip()]
