"""GitHub Actions: a patch whose production prints workflow commands cannot issue one; the action's steps run
under a simulated runner environment (event payload, step summary, outputs) on a real repository."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mergegate.ci import github
from tests.helpers import clean_env, git
from tests.test_sealed_attacks import agent_head, make_shop, raising

ROOT = Path(__file__).resolve().parent.parent
ACTION = ROOT / "action"
# Every way a line can become a workflow command, and the escapes the runner decodes.
PAYLOAD = ("\n::add-mask::decision\n::error file=src/shop/tax.py,line=1::forged\n::stop-commands::x\n"
           "  ::notice::indented\n##[add-mask]v1 form\nx ##[error]mid-line\n%0A::set-output name=decision::admit\n"
           "::endgroup::\n::x::\n%3A%3Aerror%3A%3A\r::warning::carriage return\n")


def issued(log: str) -> list[tuple[str, str, str]]:
    """The workflow commands the runner would act on, as it reads a step's log (actions/runner's rules):
    a line whose text after leading blanks starts ``::name props::data``, else an old ``##[name]data``
    anywhere in it; between ``::stop-commands::T`` and ``::T::`` nothing but the resume."""
    out, stop = [], None
    for raw in re.split(r"\r\n|\n|\r", log):
        line = raw.lstrip()
        if stop is not None:
            if line == f"::{stop}::":
                out.append(("resume", "", ""))
                stop = None
            continue
        v2 = re.match(r"::([^\s:]+)(?: ([^:]*))?::(.*)", line) if line.startswith("::") else None
        if v2:
            name, props, data = v2.group(1), v2.group(2) or "", v2.group(3)
            if name == "stop-commands":
                stop = data
            out.append((name, props, data))
            continue
        v1 = re.search(r"##\[([^\]\s;]+)[^\]]*\](.*)", raw)
        if v1:
            out.append(("v1:" + v1.group(1), "", v1.group(2)))
    return out


def test_the_simulated_runner_sees_each_command_form() -> None:
    # The simulator is the test's judge: it must find every command in the raw payload (else it proves nothing).
    names = [c[0] for c in issued(PAYLOAD)]
    assert names[:3] == ["add-mask", "error", "stop-commands"]
    assert "notice" not in names  # stopped by the payload's own ::stop-commands::x ...
    assert issued("::stop-commands::x\n::notice::hidden\n::x::\n  ::notice::indented\nok ##[error]v1\n") == [
        ("stop-commands", "", "x"), ("resume", "", ""), ("notice", "", "indented"), ("v1:error", "", "v1")]


@pytest.mark.parametrize(("text", "escaped"), [
    ("a%b", "a%25b"), ("a\nb", "a\\x0ab"), ("a\rb", "a\\x0db"), ("50%0A::x", "50%250A::x"), ("plain", "plain"),
])
def test_escape_data(text: str, escaped: str) -> None:
    assert github.escape_data(text) == escaped


def test_annotation_properties_cannot_end_the_command() -> None:
    note = github.Annotation("error", "m::x\n::add-mask::y", title="t::a,b", file="a:b,c.py", line=3)
    assert note.render() == "::error file=a%3Ab%2Cc.py,line=3,title=t%3A%3Aa%2Cb::m::x\\x0a::add-mask::y"
    assert [c[0] for c in issued(note.render())] == ["error"]


def test_outputs_are_heredocs_with_random_delimiters() -> None:
    text = github.outputs({"decision": "reject", "reason": "x\nevil=1"})
    lines = text.splitlines()
    assert lines[0].startswith("decision<<ghadelimiter_") and lines[1] == "reject" and lines[2] == lines[0][10:]
    assert lines[4] == "x\\x0aevil=1"  # one line: a value cannot start another output
    assert parse_outputs(text) == {"decision": "reject", "reason": "x\\x0aevil=1"}


def parse_outputs(text: str) -> dict[str, str]:
    """$GITHUB_OUTPUT as the runner reads it: name=value, or name<<DELIM ... DELIM."""
    out, lines, i = {}, text.splitlines(), 0
    while i < len(lines):
        if "<<" in lines[i]:
            name, delim = lines[i].split("<<", 1)
            end = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1:end])
            i = end + 1
        else:
            name, _, value = lines[i].partition("=")
            out[name] = value
            i += 1
    return out


def test_test_line() -> None:
    src = "import x\n\n\n@given(1)\ndef test_a(x):\n    pass\n\nclass TestB:\n    def test_c(self):\n        pass\n"
    assert github.test_line(src, "test_a") == 5
    assert github.test_line(src, "TestB::test_c") == 9
    assert github.test_line(src, "test_a[1-2]") == 5
    assert github.test_line(src, "test_missing") == 0


def event(base: str, head: str, name: str = "pull_request_target") -> dict[str, object]:
    """A real-shaped pull_request_target payload (the fields GitHub sends that the gate reads, and others)."""
    repo = {"id": 1, "name": "shop", "full_name": "octo/shop", "private": False, "default_branch": "main"}
    return {"action": "synchronize", "number": 7, "before": "0" * 40, "after": head, "repository": repo,
            "sender": {"login": "coder[bot]", "type": "Bot"},
            "pull_request": {"number": 7, "state": "open", "draft": False, "title": "tax: faster rounding",
                             "user": {"login": "coder[bot]", "type": "Bot"},
                             "head": {"sha": head, "ref": "agent/tax", "label": "octo:agent/tax", "repo": repo},
                             "base": {"sha": base, "ref": "main", "label": "octo:main", "repo": repo}}}


def test_event_revisions() -> None:
    payload = event("a" * 40, "b" * 40)
    assert github.event_revisions({"GITHUB_EVENT_NAME": "pull_request_target"}, payload) == ("a" * 40, "b" * 40)
    assert github.event_revisions({"GITHUB_EVENT_NAME": "push"}, payload) is None
    group = {"merge_group": {"base_sha": "c" * 40, "head_sha": "d" * 40, "head_ref": "gh-readonly-queue/main/x"}}
    assert github.event_revisions({"GITHUB_EVENT_NAME": "merge_group"}, group) == ("c" * 40, "d" * 40)


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_shop(tmp_path_factory.mktemp("github") / "shop", fees=False)


def runner_env(tmp: Path, repo: Path, base: str, head: str) -> dict[str, str]:
    """What a GitHub runner gives the action's step: the event, the summary and output files, the workflow."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "event.json").write_text(json.dumps(event(base, head)))
    gate_bin = tmp / "gate"
    gate_bin.write_text(f"#!/bin/sh\nexec {sys.executable} -m mergegate \"$@\"\n")
    gate_bin.chmod(0o755)
    return {"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request_target",
            "GITHUB_EVENT_PATH": str(tmp / "event.json"), "GITHUB_STEP_SUMMARY": str(tmp / "summary.md"),
            "GITHUB_OUTPUT": str(tmp / "output"),
            "GITHUB_WORKFLOW_REF": "octo/shop/.github/workflows/gate.yml@refs/heads/main",
            "GITHUB_ACTION_PATH": str(ROOT), "RUNNER_TEMP": str(tmp), "GATE_BIN": str(gate_bin)}


def step(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """One of the action's run: steps, stdout and stderr in one log as the runner reads them."""
    return subprocess.run(["bash", str(ACTION / script)], cwd=cwd, env=clean_env(env), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=False)


def test_production_printing_workflow_commands_cannot_issue_one(shop: Path, tmp_path: Path) -> None:
    head = agent_head(shop, "github commands", {"src/shop/tax.py": raising(f"raise ValueError({PAYLOAD!r})")})
    base = git(shop, "rev-parse", "main").stdout.strip()
    env = runner_env(tmp_path, shop, base, head)
    proc = step("check.sh", shop, env)
    assert proc.returncode == 1, proc.stdout
    assert "add-mask" in proc.stdout  # production's text did reach the log ...
    commands = issued(proc.stdout)
    token = commands[0][2]
    assert commands[0] == ("stop-commands", "", token) and re.fullmatch("[0-9a-f]{32}", token)
    assert commands[1] == ("resume", "", "")  # ... inside the fence, which nothing but the gate ended
    assert proc.stdout.count(token) == 2
    mine = commands[2:]
    assert mine[-1] == ("error", "title=mergegate", "decision: reject (fail)")
    props = {c[1].rpartition("title=")[2]: c for c in mine[:-1]}
    assert all(c[0] == "error" and re.match(r"file=oracles/properties/test_\w+\.py,line=[1-9]", c[1])
               for c in props.values()), mine
    tax = props["prop.tax_round"]
    assert tax[1] == f"file=oracles/properties/test_tax.py,line={_line(shop)},title=prop.tax_round"
    assert "%0A" not in tax[2] and "::add-mask::" in tax[2]  # production's words, shown as data
    outputs = parse_outputs((tmp_path / "output").read_text())
    assert outputs == {"decision": "reject", "reason": "fail", "admitted": "false",
                       "evidence": str(tmp_path / "gate-evidence"), "exit-code": "1"}
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("## mergegate: reject")
    assert "<" not in summary.split("```")[-1]  # outside the code blocks, production's text is entities


def _line(repo: Path) -> int:
    text = (repo / "oracles/properties/test_tax.py").read_text()
    return next(i for i, ln in enumerate(text.splitlines(), 1) if re.match(r"\s*def test_", ln))


def test_an_admitted_patch_reports_admit_and_the_step_summary(shop: Path, tmp_path: Path) -> None:
    tax = (shop / "src/shop/tax.py").read_text() + "\n# reviewed\n"
    head = agent_head(shop, "github admit", {"src/shop/tax.py": tax})
    base = git(shop, "rev-parse", "main").stdout.strip()
    env = runner_env(tmp_path, shop, base, head)
    proc = step("check.sh", shop, env)
    assert proc.returncode == 0, proc.stdout
    assert [c[0] for c in issued(proc.stdout)] == ["stop-commands", "resume", "notice"]
    assert parse_outputs((tmp_path / "output").read_text())["admitted"] == "true"
    assert (tmp_path / "summary.md").read_text().startswith("## mergegate: admit")


def test_an_error_inside_the_fence_is_reported_after_it(shop: Path, tmp_path: Path) -> None:
    env = runner_env(tmp_path, shop, "0" * 40, "f" * 40)  # revisions the clone does not have
    proc = step("check.sh", shop, env)
    assert proc.returncode == 2, proc.stdout
    commands = issued(proc.stdout)
    assert [c[0] for c in commands] == ["stop-commands", "resume", "error"]
    assert "exit 2" in commands[-1][2]
    assert parse_outputs((tmp_path / "output").read_text())["decision"] == "error"


def test_setup_bubblewrap_lifts_the_apparmor_restriction_and_checks_bwrap(tmp_path: Path) -> None:
    knob = tmp_path / "knob"
    knob.write_text("1\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    for name, body in (("sysctl", f'echo "sysctl $*" >> {calls}'), ("sudo", f'echo "sudo $1" >> {calls}; "$@"')):
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    path = f"{bin_dir}:/usr/bin:/bin"
    proc = step("setup-bubblewrap.sh", tmp_path, {"GATE_USERNS_KNOB": str(knob), "PATH": path})
    assert proc.returncode == 0, proc.stdout
    assert "sysctl -q -w kernel.apparmor_restrict_unprivileged_userns=0" in calls.read_text()
    assert "bubblewrap works" in proc.stdout
    # A bubblewrap that still cannot make a sandbox stops the job before anything runs.
    (bin_dir / "bwrap").write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    (bin_dir / "bwrap").chmod(0o755)
    proc = step("setup-bubblewrap.sh", tmp_path, {"GATE_USERNS_KNOB": str(knob), "PATH": path})
    assert proc.returncode == 2
    assert [c[0] for c in issued(proc.stdout)] == ["error"] and "setting up uid map" in proc.stdout
