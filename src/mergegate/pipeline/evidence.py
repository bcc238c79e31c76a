"""The evidence of one check: the packet, the four-line review note, JUnit XML, Markdown.

A verdict without its evidence is not a verdict: the packet is written for every
outcome, including the ones that stopped before any run (their JSONL files are
empty, their contract names the stage that stopped them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from mergegate import textsafe
from mergegate.pipeline import diffrun
from mergegate.pipeline.check import Outcome
from mergegate.records import fsutil, packet
from mergegate.runner.rows import SEALED, Row, write_jsonl


def contract(o: Outcome) -> dict[str, Any]:
    judged = {"judged": o.pair_of.to_json()} if o.pair_of is not None else {}
    if o.pair is not None:
        return {**o.pair.contract, "merge_base": o.merge_base, "base_revision": o.base_revision, **judged}
    return {"contract_version": diffrun.CONTRACT_VERSION, "base": o.target or o.merge_base, "head": o.head,
            "merge_base": o.merge_base, "base_revision": o.base_revision, "seeds": list(o.seeds),
            "properties": [{"id": p.id, "oracle": p.oracle, "claim": p.claim} for p in o.properties],
            "stopped_at": o.stopped_at, **judged}


def judged_line(o: Outcome) -> str:
    """Which revisions were judged: the head as it is, its merge result with the target's tip, or neither."""
    return o.pair_of.line(o.base) if o.pair_of is not None else f"judged: head {o.head[:12]}"


def contract_hash(o: Outcome) -> str:
    return diffrun.contract_hash(contract(o))


def reason_codes(o: Outcome) -> list[str]:
    """Per-property reason codes (``prop=reason``), or the stage's reason when nothing ran."""
    if o.verdicts:
        return [f"{v.prop}={v.reason}" for v in o.verdicts]
    codes = [o.reason]
    if o.score is not None and o.reason == "independence":
        codes += list(o.score.reasons)
    missed = [c.name for c in o.canaries if not c.ok]
    return codes + [f"canary_bad={m}" for m in missed]


def line_counts(o: Outcome) -> tuple[int, int]:
    if o.pair is None:
        return 0, 0
    return len(o.pair.base_rows), len(o.pair.head_rows)


def review_note(o: Outcome) -> list[str]:
    """Seed 003's four lines: contract hash, decision, reason codes, JSONL line counts."""
    base_n, head_n = line_counts(o)
    return [
        f"contract: {contract_hash(o)}",
        f"decision: {o.decision} ({o.reason})",
        f"reasons: {', '.join(reason_codes(o)) or 'none'}",
        f"lines: base.jsonl {base_n}, patch.jsonl {head_n}",
    ]


def decision_json(o: Outcome) -> dict[str, Any]:
    data: dict[str, Any] = {
        "decision": o.decision, "reason": o.reason, "admitted": o.admitted, "stopped_at": o.stopped_at,
        "base": o.base, "head": o.head, "merge_base": o.merge_base, "base_revision": o.base_revision,
        "target": o.target, "judged": o.pair_of.to_json() if o.pair_of is not None else None,
        "blob": o.blob, "agent": o.agent, "contract_hash": contract_hash(o),
        "canaries": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in o.canaries],
        "scorecard": o.score.to_dict() if o.score else None,
        "manifest": list(o.manifest_lines),
        "oracle_edited": list(o.oracle_edited),
        "properties": [v.to_dict() for v in o.verdicts],
        "combined": o.combined.to_dict() if o.combined else None,
        "differential": o.differential.to_dict() if o.differential else None,
        "propose_freeze": [v.prop for v in o.verdicts if v.propose_freeze],
        "review": [v.prop for v in o.verdicts if v.review],
        "shared": list(o.shared), "uncovered": list(o.uncovered),
        "dependency_files": list(o.dependency_files),
        "seeds": list(o.seeds), "fresh_seeds": list(o.fresh_seeds),
        "coverage": o.coverage.to_dict() if o.coverage is not None else None,
    }
    if o.pair is not None:
        data["fixture_digest"] = o.pair.contract["fixture_digest"]
        data["runs"] = run_modes(o)
    return data


def run_modes(o: Outcome) -> dict[str, dict[str, list[str]]]:
    """How each property ran on each side: isolation (sealed | shared) and containment (bwrap | none)."""
    out: dict[str, dict[str, list[str]]] = {}
    for side, rows in (("base", o.pair.base_rows if o.pair else ()), ("head", o.pair.head_rows if o.pair else ())):
        for r in rows:
            modes = out.setdefault(r.prop, {}).setdefault(side, [])
            mode = f"{r.isolation or 'unknown'}/{r.containment or 'unknown'}"
            if mode not in modes:
                modes.append(mode)
    return out


def write_packet(o: Outcome, directory: str | Path) -> Path:
    """contract.json, fixture.digest, oracle_edited.json, base.jsonl, patch.jsonl, decision.json, summary.md.

    Written whole (``packet``): into a temporary folder, sealed by ``packet.json``, renamed into place.
    """
    return packet.write(directory, lambda out: _fill(o, out))


def _fill(o: Outcome, out: Path) -> None:
    fsutil.atomic_write(out / "contract.json", _json(contract(o)))
    digests = o.pair.contract["fixture_digest"] if o.pair else {}
    fsutil.atomic_write(out / "fixture.digest",
                        "".join(f"{side} {digests[side]}\n" for side in ("base", "head") if side in digests).encode())
    fsutil.atomic_write(out / "oracle_edited.json", _json({"oracle_edited": list(o.oracle_edited),
                                                           "split": dict(o.split_json)}))
    write_jsonl(o.pair.base_rows if o.pair else (), out / "base.jsonl")
    write_jsonl(o.pair.head_rows if o.pair else (), out / "patch.jsonl")
    fsutil.atomic_write(out / "decision.json", _json(decision_json(o)))
    fsutil.atomic_write(out / "coverage.json", _json(o.coverage.to_dict() if o.coverage is not None else {
        "measured": False, "why": "no run on the head here (stopped early, or rows made elsewhere)"}))
    fsutil.atomic_write(out / "summary.md", markdown(o).encode())


def default_dir(area: Path, o: Outcome) -> Path:
    """``<area>/evidence/<target tip>-<head>``: checks of one head against two targets keep two packets."""
    head = o.pair_of.patch_head if o.pair_of is not None else o.head
    return area / "evidence" / f"{(o.target or o.merge_base)[:12]}-{head[:12]}"


def _json(data: Any) -> bytes:
    return json.dumps(data, indent=2, sort_keys=True).encode() + b"\n"


# ---------------------------------------------------------------- per-property rows


def prop_rows(o: Outcome) -> list[tuple[str, str, str, str]]:
    """(prop, verdict, reason, detail) for every catalog property; not run => fail."""
    by_prop = {v.prop: v for v in o.verdicts}
    rows = []
    for p in sorted(o.properties, key=lambda p: p.id):
        v = by_prop.get(p.id)
        if v is None:
            rows.append((p.id, "fail", "not_run", f"stopped at {o.stopped_at}: {o.reason}"))
            continue
        rows.append((p.id, v.verdict, v.reason, _detail(o, v)))
    return rows


def _detail(o: Outcome, v: Any) -> str:
    parts = []
    if v.freeze_id:
        parts.append(f"frozen by {v.freeze_id}")
    for fid, codes in v.blockers:
        parts.append(f"freeze {fid} blocked: {', '.join(codes)}")
    if v.propose_freeze:
        parts.append("propose_freeze (review ticket)")
    if v.review:
        parts.append("flag for spec review")
    if o.pair is not None:
        base, head = o.pair.rows_of.get(v.prop, ((), ()))
        mine = [*base, *head]
        if any(r.isolation != SEALED for r in mine):
            parts.append("unsealed (isolation: shared: a fail counts, a pass is no evidence)")
        elif any(r.containment == "none" for r in mine):
            parts.append("uncontained (no bubblewrap)")
        fails = [r for r in mine if r.status == "fail"]
        if fails:
            error = (fails[0].error or "").strip()
            same = error.rstrip(":") == fails[0].witness.split(":")[0]  # a bare "AssertionError:"
            parts.append(fails[0].witness if same or not error else f"{fails[0].witness} ({error})")
            first = _first_failure(o, v.prop)
            if first is not None and first[2].falsifying_example:
                parts.append(" ".join(first[2].falsifying_example.split()))
    return textsafe.line("; ".join(parts))  # production's exception text, shown and never obeyed


def _first_failure(o: Outcome, prop: str) -> tuple[str, int, Row] | None:
    """(side, seed, row) of the failure to show for ``prop``: the patch's first, else the base's."""
    if o.pair is None:
        return None
    base, head = o.pair.rows_of.get(prop, ((), ()))
    for side, rows in (("patch", head), ("base", base)):
        for r in sorted(rows, key=lambda r: r.seed):
            if r.status == "fail":
                return side, r.seed, r
    return None


def failure_blocks(o: Outcome) -> list[tuple[str, list[str]]]:
    """Per failing property (verdict not pass): a title and its lines, Hypothesis's falsifying example
    and the command that reproduces it, each line safe for a terminal."""
    blocks = []
    for v in sorted(o.verdicts, key=lambda v: v.prop):
        first = _first_failure(o, v.prop)
        if v.verdict == "pass" or first is None:
            continue
        side, seed, row = first
        lines = [textsafe.line(t) for t in (row.falsifying_example or "").splitlines()]
        if row.reproduce:
            lines.append(f"reproduce: {textsafe.line(row.reproduce)}")
        blocks.append((textsafe.line(f"{v.prop} ({side}, seed {seed}): {row.witness}"), lines))
    return blocks


def manifest_text(o: Outcome) -> list[str]:
    """When the manifest stopped the check: what differs (missing / extra / changed), and the fix."""
    if o.stopped_at != "independence" or not o.manifest_lines:
        return []
    return ["the manifest at the head does not describe the guarded files there:",
            *(f"  {textsafe.line(line)}" for line in o.manifest_lines),
            "  fix: a person re-signs it in an oracle-only commit: git add -- <guarded files> && "
            "gate manifest sign --staged && git commit -m 'oracle: re-sign the manifest'"]


def dependency_text(o: Outcome) -> list[str]:
    """When the head changes dependency declarations: which, and why that is ``review``."""
    if not o.dependency_files:
        return []
    return [textsafe.line("dependency declarations changed: " + ", ".join(o.dependency_files) + " (the head ran "
                          "against the base's dependencies: a person installs the new ones and decides)")]


def failure_text(o: Outcome) -> list[str]:
    """The failure blocks as indented console lines."""
    out = []
    for title, lines in failure_blocks(o):
        out += [title, *("  " + ln for ln in lines)]
    return out


# ---------------------------------------------------------------- CI formats


def junit(o: Outcome) -> str:
    """One testcase per property: fail = failure, inconclusive = skipped with reason, never passed."""
    rows = prop_rows(o)
    failures = sum(1 for r in rows if r[1] not in ("pass", "inconclusive")) + (0 if o.admitted else 1)
    skipped = sum(1 for r in rows if r[1] == "inconclusive")
    cases = []
    seconds: dict[str, float] = {}
    for r in (*o.pair.base_rows, *o.pair.head_rows) if o.pair else ():
        seconds[r.prop] = seconds.get(r.prop, 0.0) + r.duration_s
    blocks = failure_blocks(o)
    for prop, verdict, reason, detail in rows:
        head = (f'    <testcase classname="mergegate.properties" name={quoteattr(prop)} '
                f'time="{seconds.get(prop, 0.0):.3f}">')
        if verdict == "pass":
            cases.append(head[:-1] + "/>")
        elif verdict == "inconclusive":
            cases.append(f"{head}\n      <skipped message={quoteattr(f'inconclusive: {reason}; {detail}')}/>\n"
                         "    </testcase>")
        else:
            body = "\n".join([detail, *next((ls for t, ls in blocks if t.startswith(f"{prop} (")), [])])
            cases.append(f"{head}\n      <failure message={quoteattr(f'{verdict}: {reason}; {detail}')}>"
                         f"{escape(body)}</failure>\n    </testcase>")
    gate_case = '    <testcase classname="mergegate" name="gate.decision"'
    if o.admitted:
        cases.append(gate_case + "/>")
    else:
        cases.append(f"{gate_case}>\n      <failure message={quoteattr(f'{o.decision}: {o.reason}')}>"
                     f"{escape(chr(10).join(review_note(o)))}</failure>\n    </testcase>")
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuites><testsuite name="mergegate" tests="{len(rows) + 1}" failures="{failures}" '
        f'errors="0" skipped="{skipped}">\n' + "\n".join(cases) + "\n  </testsuite>\n</testsuites>\n"
    )


def markdown(o: Outcome) -> str:
    """The review note, then a table: for a CI step summary and summary.md."""
    icon = {"pass": "✅", "fail": "❌", "inconclusive": "⚠️"}
    lines = [f"## mergegate: {o.decision}", "", textsafe.line(judged_line(o)), "", "```", *review_note(o), "```", "",
             "| property | verdict | reason | detail |", "|---|---|---|---|"]
    for prop, verdict, reason, detail in prop_rows(o):
        cell = _md(detail)
        lines.append(f"| `{prop}` | {icon.get(verdict, '')} {verdict} | {reason} | {cell} |")
    for title, block in failure_blocks(o):
        lines += ["", f"### {_md(title)}", "", *_fenced(block)]
    mismatch = manifest_text(o)
    if mismatch:
        lines += ["", f"### {mismatch[0]}", "", *_fenced([ln.strip() for ln in mismatch[1:]])]
    lines += _coverage_markdown(o)
    if o.fresh_seeds:
        lines += ["", f"Fresh seeds (drawn for this check): {', '.join(map(str, o.fresh_seeds))}; "
                  f"reproduce one: `{fresh_reproduce(o)}`"]
    if o.canaries:
        lines += ["", "Canaries: " + ", ".join(f"{c.name} {'ok' if c.ok else 'MISS'}" for c in o.canaries)]
    if o.dependency_files:
        lines += ["", _md(dependency_text(o)[0])]
    if o.score is not None:
        lines += ["", f"Scorecard: {o.score.verdict}, debt {o.score.debt}, reasons {', '.join(o.score.reasons)}"]
    lines += [f"\n{line}" for line in shared_text(o)]
    return "\n".join(lines) + "\n"


def shared_text(o: Outcome) -> list[str]:
    """What the shared entries could do (only reject), and the paths that rest on them alone."""
    out = []
    if o.shared:
        out.append(f"Shared entries (a fail counts, a pass is no evidence): {', '.join(o.shared)}")
    if o.uncovered:
        out.append(f"Covered by no passing sealed entry, only by shared ones: {', '.join(o.uncovered)}")
    return [textsafe.line(line) for line in out]


_MD_SPECIAL = frozenset("\\`*_[]<>!#|~&()")


def _md(text: str) -> str:
    """Inline Markdown for text production may have chosen: shown as typed, never a link, image, tag or table."""
    return "".join(f"&#{ord(c)};" if c in _MD_SPECIAL else c for c in text.replace("\n", " "))


def fresh_reproduce(o: Outcome) -> str:
    """The command that runs every property on the head at this check's fresh seeds again (the oracle
    from the merge-base, as in the check)."""
    import shlex

    trusted = f" --trusted {shlex.quote(o.merge_base[:12])}" if o.merge_base != o.head else ""
    return f"gate run --rev {shlex.quote(o.head[:12])}{trusted} --seeds {','.join(map(str, o.fresh_seeds))}"


def _coverage_markdown(o: Outcome) -> list[str]:
    from mergegate.rules.coverage import ranges

    rep = o.coverage
    if rep is None or not rep.changed:
        return []
    lines = ["", f"### Change coverage: {rep.reached_count} of {rep.total} changed executable lines reached "
             f"(threshold {rep.threshold:.0%})", "",
             "Reported by a tracer inside the subject (production's own process): a hostile patch can "
             "fake it; it catches the change no property looks at.", ""]
    if rep.unreached:
        lines += ["Not reached by any property:", ""]
        lines += [f"- `{path}`: lines {ranges(v)}" for path, v in sorted(rep.unreached.items())]
    if rep.at_import_only:
        lines += ["", "Ran only while production was imported (before any property):", ""]
        lines += [f"- `{path}`: lines {ranges(v)}" for path, v in sorted(rep.at_import_only.items())]
    if rep.by_prop:
        lines += ["", "Properties that reached the change:", ""]
        lines += [f"- `{prop}`: " + "; ".join(f"`{p}` {ranges(v)}" for p, v in sorted(paths.items()))
                  for prop, paths in sorted(rep.by_prop.items())]
    else:
        lines += ["", "No property reached the change."]
    return lines


def _fenced(block: list[str]) -> list[str]:
    """A code block whose fence is longer than any run of backticks in it: the text cannot close it."""
    import re

    longest = max((len(m) for line in block for m in re.findall("`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, *block, fence]


def table_text(o: Outcome) -> str:
    """The plain terminal table (no colour)."""
    rows = prop_rows(o)
    width = max([len(r[0]) for r in rows] + [8])
    out = [f"{'property':<{width}}  {'verdict':<12}  {'reason':<20}  detail"]
    out += [f"{p:<{width}}  {v:<12}  {r:<20}  {d}" for p, v, r, d in rows]
    return "\n".join([*out, *shared_text(o)])
