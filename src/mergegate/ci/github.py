"""GitHub Actions output for ``gate check``: the fence, annotations, the step summary and outputs (pure formatting).

The runner reads every line of a step's output as a possible workflow command (``::add-mask::``,
``::error::``, ``::stop-commands::``; leading blanks are skipped, and the old ``##[command]`` form is
found anywhere in a line).  Production's text reaches the log (exception messages, falsifying
examples), so everything ``gate check`` prints runs between ``::stop-commands::<token>`` and
``::<token>::`` with a token production never sees; after the fence the gate prints only its own
commands, every value in them escaped the way the runner unescapes it.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mergegate import ci, textsafe

if TYPE_CHECKING:
    from mergegate.pipeline.check import Outcome

# What the runner decodes in a command's data and its properties (actions/toolkit's escapeData/escapeProperty).
_DATA = {"%": "%25", "\r": "%0D", "\n": "%0A"}
_PROPERTY = {**_DATA, ":": "%3A", ",": "%2C"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def enabled(environ: Mapping[str, str]) -> bool:
    """Inside a GitHub Actions job (``GITHUB_ACTIONS=true``)."""
    return ci.where(environ) == "GitHub Actions"


def new_token() -> str:
    """The fence's token: random per run, so nothing printed inside can end the fence."""
    return secrets.token_hex(16)


def stop(token: str) -> str:
    return f"::stop-commands::{token}"


def resume(token: str) -> str:
    return f"::{token}::"


def escape_data(text: str) -> str:
    text = textsafe.line(text)  # no control or invisible characters, no newline, in what a person reads
    return "".join(_DATA.get(c, c) for c in text)


def escape_property(text: str) -> str:
    return "".join(_PROPERTY.get(c, c) for c in textsafe.line(text))


@dataclass(frozen=True)
class Annotation:
    level: str  # error | warning | notice
    message: str
    title: str = ""
    file: str = ""
    line: int = 0

    def render(self) -> str:
        assert self.level in ("error", "warning", "notice")
        props = [f"{key}={escape_property(value)}" for key, value in
                 (("file", self.file), ("line", str(self.line) if self.line > 0 else ""), ("title", self.title))
                 if value]
        return f"::{self.level}{' ' + ','.join(props) if props else ''}::{escape_data(self.message)}"


def outputs(values: Mapping[str, str]) -> str:
    """``$GITHUB_OUTPUT`` lines: each value in a heredoc whose random delimiter no value contains."""
    out = []
    for name, value in values.items():
        if not _NAME.fullmatch(name):
            raise ValueError(f"bad output name {name!r}")
        delimiter = f"ghadelimiter_{new_token()}"
        assert delimiter not in value
        out.append(f"{name}<<{delimiter}\n{textsafe.line(value)}\n{delimiter}\n")
    return "".join(out)


def test_line(source: str, function: str) -> int:
    """The line of ``def <test>`` (or ``class <Test>``) in a trusted oracle file, else 0 (pure)."""
    name = function.split("::")[-1].split("[")[0]
    pattern = re.compile(rf"\s*(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b")
    for number, text in enumerate(source.splitlines(), 1):
        if pattern.match(text):
            return number
    return 0


def notes(o: Outcome, source_of: Callable[[str], str | None]) -> list[Annotation]:
    """One annotation per property that did not pass (on its test's line in the trusted oracle file), then the
    decision.  ``source_of``: a trusted oracle file's text (the merge-base's), None when absent."""
    from mergegate.pipeline import evidence

    files = {p.id: p for p in o.properties}
    out = []
    for prop, verdict, reason, detail in evidence.prop_rows(o):
        if verdict == "pass":
            continue
        entry = files[prop]
        text = source_of(entry.oracle_file)
        out.append(Annotation("warning" if verdict == "inconclusive" else "error", f"{verdict}: {reason}; {detail}",
                              prop, entry.oracle_file, test_line(text, entry.oracle_function) if text else 0))
    level = "notice" if o.admitted else "error"
    out.append(Annotation(level, f"decision: {o.decision} ({o.reason})", "mergegate"))
    return out


PR_EVENTS = ("pull_request", "pull_request_target")


def event_revisions(environ: Mapping[str, str], payload: Mapping[str, object]) -> tuple[str, str] | None:
    """(base, head) commit ids from a pull request's or a merge group's event payload, else None (pure)."""
    name = environ.get("GITHUB_EVENT_NAME", "")
    if name in PR_EVENTS:
        pr = payload.get("pull_request")
        if isinstance(pr, dict):
            base, head = pr.get("base"), pr.get("head")
            if isinstance(base, dict) and isinstance(head, dict):
                b, h = base.get("sha"), head.get("sha")
                if isinstance(b, str) and isinstance(h, str):
                    return b, h
    if name == "merge_group":
        group = payload.get("merge_group")
        if isinstance(group, dict):
            b, h = group.get("base_sha"), group.get("head_sha")
            if isinstance(b, str) and isinstance(h, str):
                return b, h
    return None


def event_payload(environ: Mapping[str, str]) -> dict[str, object]:
    """The job's event payload (``GITHUB_EVENT_PATH``), {} when there is none; a bad file is a usage error."""
    import json

    from mergegate.errors import UsageError

    path = environ.get("GITHUB_EVENT_PATH", "")
    if not path:
        return {}
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read(16 << 20))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read the event payload: {exc}",
                         "run inside a GitHub Actions job, or pass --base and --head") from None
    return data if isinstance(data, dict) else {}
