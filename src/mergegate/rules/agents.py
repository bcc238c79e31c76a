"""Is this change an agent's?  Pure."""

from __future__ import annotations

from collections.abc import Mapping

from mergegate.rules.globs import globs_match_any
from mergegate.rules.shapes import AgentPolicy


def is_agent(policy: AgentPolicy, environ: Mapping[str, str], author_email: str = "",
             pusher: str | None = None) -> bool:
    """True when the environment flag is set, the author e-mail or the pusher matches the policy."""
    if environ.get(policy.agents.env, "").strip() == "1":
        return True
    if author_email and globs_match_any(author_email, policy.agents.authors):
        return True
    return bool(pusher) and globs_match_any(pusher or "", policy.agents.pushers)


def agent_reason(policy: AgentPolicy, environ: Mapping[str, str], author_email: str = "",
                 pusher: str | None = None) -> str:
    """Why this change counts as an agent's (for messages)."""
    if environ.get(policy.agents.env, "").strip() == "1":
        return f"{policy.agents.env}=1 in the environment"
    if author_email and globs_match_any(author_email, policy.agents.authors):
        return f"author {author_email} matches agents.authors"
    return f"pusher {pusher} matches agents.pushers"


IDENTITY_FIX = ("list the agents' server logins in agents.pushers, or turn on "
                "server.require_signed_oracle_commits, or protect the default branch on the host "
                "and set server.protected_branches: true (docs/server.md, Identify agents)")


def identity_gap(policy: AgentPolicy) -> str:
    """Why a server under ``policy`` cannot tell an agent from a person ("" when it can): an agent
    that unsets agents.env and commits with a person's e-mail would pass for one."""
    server = policy.server
    if policy.agents.pushers or server.require_signed_oracle_commits or server.protected_branches:
        return ""
    return ("the server cannot tell an agent from a person (agents.pushers is empty, "
            "server.require_signed_oracle_commits and server.protected_branches are off): an agent "
            "using a person's e-mail could change the oracle")
