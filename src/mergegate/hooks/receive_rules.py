"""The server's per-commit and per-ref rules (pure): facts in, refusals out.

Every refusal renders as exactly one line (short id or ref, rule, paths, fix),
whatever bytes the paths hold: git relays hook output line by line, and GitLab
shows only lines that start with ``GL-HOOK-ERR:``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from mergegate.records.manifest import Report
from mergegate.rules.split import Split

MIXED = "mixed"
MANIFEST = "manifest"
AGENT_GUARDED = "agent-guarded"
UNSIGNED = "unsigned"
AGENT_FORCE_PUSH = "agent-force-push"
AGENT_DELETE = "agent-delete"
NOT_A_COMMIT = "not-a-commit"

GITLAB_PREFIX = "GL-HOOK-ERR: "
SHOWN_PATHS = 4
_PLAIN = re.compile(r"[A-Za-z0-9._/+@=,%#~-]+")


@dataclass(frozen=True)
class Refusal:
    """One refused commit (``subject`` is its short id) or ref (``subject`` is the ref name)."""

    subject: str
    rule: str
    paths: tuple[str, ...]
    fix: str
    why: str = ""

    def line(self, fmt: str = "plain") -> str:
        """The one line the pusher sees."""
        what = ": ".join(p for p in (self.why, quote_paths(self.paths)) if p)
        text = f"{self.subject} {self.rule}: {what}; fix: {self.fix}"
        text = text.replace("\n", " ").replace("\r", " ")
        return GITLAB_PREFIX + text if fmt == "gitlab" else text


@dataclass(frozen=True)
class CommitFacts:
    """Everything the rules need to know about one pushed commit."""

    sha: str
    split: Split  # its changes against its first parent, classified by the trusted policy
    agent: str  # why it counts as an agent's commit; "" when it does not
    manifest: Report | None  # None: not checked (the commit changes no guarded path)
    signature_ok: bool | None  # None: signatures are not required
    signers_file: str = ""
    merge: bool = False


def quote_path(path: str) -> str:
    """A path as one shell-safe token; anything unusual (spaces, newlines) JSON-quoted."""
    return path if _PLAIN.fullmatch(path) else json.dumps(path)


def quote_paths(paths: tuple[str, ...]) -> str:
    shown = " ".join(quote_path(p) for p in paths[:SHOWN_PATHS])
    more = len(paths) - SHOWN_PATHS
    return f"{shown} (+{more} more)" if more > 0 else shown


def short(sha: str) -> str:
    return sha[:12]


def judge_commit(facts: CommitFacts) -> list[Refusal]:
    """The refusals one commit earns; an empty list admits it."""
    out: list[Refusal] = []
    s, sid = facts.split, short(facts.sha)
    # A merge is judged by what it changes on its own account; say so, or the fix reads wrong.
    merge_hint = (" (this merge makes these changes itself: neither is taken unchanged from a parent "
                  "that changed it since the merge base)" if facts.merge else "")
    if s.mixed:
        out.append(Refusal(
            sid, MIXED, (*s.guarded, *s.production),
            "commit the guarded and the production paths apart, the oracle first: `git reset --soft HEAD~1` "
            "then `gate commit --split -m \"<message>\"` (or `git rebase -i`, edit, split and re-sign with "
            "`gate manifest sign --staged`), push again" + merge_hint,
            "guarded and production paths in one commit",
        ))
    if facts.agent and s.guarded:
        out.append(Refusal(
            sid, AGENT_GUARDED, s.guarded,
            "drop these paths from the agent's commits; a person changes the oracle, "
            "the manifest, the ledger and the policy" + merge_hint,
            f"an agent's commit ({facts.agent}) changes guarded paths",
        ))
    if facts.manifest is not None and not facts.manifest.ok:
        r = facts.manifest
        out.append(Refusal(
            sid, MANIFEST, (*r.missing, *r.extra, *r.changed),
            "re-sign in that commit with `gate manifest sign --staged` (an oracle-only commit) "
            "and push again",
            _manifest_why(r),
        ))
    if facts.signature_ok is False and s.guarded:
        out.append(Refusal(
            sid, UNSIGNED, s.guarded,
            f"sign the commit with a key listed in {facts.signers_file or 'the allowed signers'} "
            "(`git commit --amend --no-edit -S`) and push again",
            "a commit changing guarded paths lacks a valid signature",
        ))
    return out


def render(refusals: list[Refusal] | tuple[Refusal, ...], fmt: str = "plain") -> list[str]:
    """One line per refused commit or ref, its rules joined, in first-seen order."""
    by_subject: dict[str, list[Refusal]] = {}
    for refusal in refusals:
        by_subject.setdefault(refusal.subject, []).append(refusal)
    lines = []
    for subject, group in by_subject.items():
        if len(group) == 1:
            lines.append(group[0].line(fmt))
            continue
        why = " | ".join(": ".join(x for x in (r.rule, r.why, quote_paths(r.paths)) if x) for r in group)
        fix = "; then ".join(dict.fromkeys(r.fix for r in group))
        merged = Refusal(subject, ",".join(r.rule for r in group), (), fix, why)
        lines.append(merged.line(fmt))
    return lines


def _manifest_why(report: Report) -> str:
    if report.problems:
        return "; ".join(report.problems)
    parts = [f"{len(v)} {k}" for k, v in
             (("missing", report.missing), ("extra", report.extra), ("changed", report.changed)) if v]
    return "MANIFEST.sha256 does not match this commit's files (" + ", ".join(parts) + ")"


def judge_ref(ref: str, deleted: bool, fast_forward: bool | None, agent: str, force_policy: str
              ) -> list[Refusal]:
    """Ref-level rules: an agent may not rewrite or delete history when the policy says refuse."""
    if not agent or force_policy == "allow":
        return []
    if deleted:
        return [Refusal(ref, AGENT_DELETE, (), "ask a person to delete it",
                        f"an agent ({agent}) may not delete a ref (server.agent_force_push: refuse)")]
    if fast_forward is False:
        return [Refusal(ref, AGENT_FORCE_PUSH, (),
                        f"fetch, rebase onto {ref} and push a fast-forward, or ask a person",
                        f"an agent ({agent}) may not rewrite history (server.agent_force_push: refuse)")]
    return []
