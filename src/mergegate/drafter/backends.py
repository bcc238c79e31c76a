"""Drafter backends: one ``Protocol`` and a registry (like pre-commit's languages).

A backend turns API entries into jobs for the in-container agent and, when it
talks to a model, supplies the host-side channel the relay forwards to.  The
drafting itself always happens inside the sandbox.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mergegate.drafter import modes
from mergegate.drafter.channel import Channel, config_from
from mergegate.drafter.surface import Api
from mergegate.errors import UsageError
from mergegate.records.policy import Drafter

SYSTEM_PROMPT = (
    "You write Hypothesis property-based tests in Python. Reply with one Python code block only. "
    "Import the module under test by its dotted name, use `from hypothesis import given, "
    "strategies as st`, and write at most 5 test functions named test_*. Every test must end in an "
    "`assert` of a relation that holds for every generated input: a round trip (decode(encode(x)) == x), "
    "idempotence (f(f(x)) == f(x)), an equivalence with a simpler reference implementation, an invariant "
    "of the result (length, order, membership, type) or a bound. A test that only calls the function "
    "asserts nothing and is discarded; so is one that does not run. Use only the standard library, "
    "hypothesis and the module under test. Never use st.nothing(); write plain ASCII, no control characters."
)


@dataclass(frozen=True)
class Job:
    """One drafting request: an API entry and the exact prompt the drafter got."""

    key: str
    api: Api
    prompt: str
    messages: tuple[tuple[str, str], ...] = ()
    mode: str = "magic"  # the ghostwriter to call
    partners: tuple[Api, ...] = ()  # further APIs of that call (the inverse of a round trip ...)

    @property
    def prompt_hash(self) -> str:
        return hashlib.sha256(self.prompt.encode()).hexdigest()

    @property
    def target(self) -> str:
        return "+".join(a.target for a in (self.api, *self.partners))

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key, "module": self.api.module, "qualname": self.api.qualname, "mode": self.mode,
            "targets": [[a.module, a.qualname] for a in (self.api, *self.partners)],
            "messages": [{"role": r, "content": c} for r, c in self.messages],
        }


class Backend(Protocol):
    """What `gate draft-props` needs from a drafter."""

    name: str
    model: str

    def jobs(self, apis: Sequence[Api]) -> list[Job]:
        """One job per API entry."""
        ...

    def channel(self) -> Channel | None:
        """The host-side model channel, or None for an offline drafter."""
        ...


class Ghostwriter:
    """Hypothesis's ghostwriter (``magic``), offline; runs in the sandbox because it imports the code."""

    name = "ghostwriter"

    def __init__(self, drafter: Drafter, environ: Mapping[str, str]) -> None:
        import hypothesis

        self.model = f"hypothesis.extra.ghostwriter {hypothesis.__version__}"

    def jobs(self, apis: Sequence[Api]) -> list[Job]:
        return [Job(f"c{i:03d}", p.apis[0], p.call, mode=p.mode, partners=p.apis[1:])
                for i, p in enumerate(modes.plan(apis))]

    def channel(self) -> Channel | None:
        return None


def user_prompt(api: Api) -> str:
    """The prompt for one API entry: its module, signature, docstring and source."""
    return "\n".join([
        f"Module: {api.module} (file {api.path})",
        f"Public {api.kind}: {api.signature}",
        f"Docstring: {api.doc or '(none)'}",
        "Source:", "```python", api.source, "```",
        f"Write Hypothesis properties for {api.target}: relations it must satisfy, each checked with assert.",
    ])


class OpenAI:
    """Any OpenAI-compatible chat-completions endpoint, reached through the relay."""

    name = "openai"

    def __init__(self, drafter: Drafter, environ: Mapping[str, str]) -> None:
        self.config = config_from(drafter, environ)
        self.model = self.config.model

    def jobs(self, apis: Sequence[Api]) -> list[Job]:
        jobs = []
        for i, api in enumerate(apis):
            messages = (("system", SYSTEM_PROMPT), ("user", user_prompt(api)))
            prompt = json.dumps([list(m) for m in messages])
            jobs.append(Job(f"c{i:03d}", api, prompt, messages))
        return jobs

    def channel(self) -> Channel | None:
        return Channel(self.config)


BACKENDS: dict[str, Callable[[Drafter, Mapping[str, str]], Backend]] = {
    "ghostwriter": Ghostwriter,
    "openai": OpenAI,
}


def make(name: str, drafter: Drafter, environ: Mapping[str, str]) -> Backend:
    """The named backend; an unknown name is a usage error listing the known ones."""
    try:
        factory = BACKENDS[name]
    except KeyError:
        raise UsageError(f"unknown drafter {name!r}", f"use one of: {', '.join(sorted(BACKENDS))}") from None
    return factory(drafter, environ)
