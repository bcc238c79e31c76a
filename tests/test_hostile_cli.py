"""The inputs that still crashed the real CLI, and the rest of their classes, each through the real ``gate``.

Huge numbers (past Python's 4,300-digit int limit), over-long paths, null fields in every JSON
file the gate reads, ids that disagree with their folder, and every YAML file through every
command that reads it.  Each answer is the one-line error (file, line where there is one, fix;
exit 2) or the right answer; never a traceback, never exit 3.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mergegate.drafter import journal, queue
from tests.helpers import commit, gate, git, init_repo, write
from tests.test_drafter_queue import SHOP, enqueue

HUGE = "9" * 4400


def one_line_exit_2(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "fix:" in proc.stderr and all(w in proc.stderr for w in words), proc.stderr


def never_a_crash(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode in (0, 1, 2) and "Traceback" not in proc.stderr, proc.stdout + proc.stderr


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = init_repo(tmp_path / "repo")
    commit(path, {"src/shop.py": SHOP, "docs/a.txt": "doc\n"}, "production")
    return path


def _commit_unchecked(repo: Path, files: dict[str, str | bytes | None], message: str = "x") -> None:
    write(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", message)


# ---------------------------------------------------------------- the inputs the issue names


def test_a_manifest_size_of_4400_digits_is_the_line_it_is_on(repo: Path) -> None:
    path = repo / "oracles/MANIFEST.sha256"
    lines = path.read_text().splitlines(keepends=True)
    sha, _size, name = lines[1].split("  ")
    lines[1] = f"{sha}  {HUGE}  {name}"
    _commit_unchecked(repo, {"oracles/MANIFEST.sha256": "".join(lines)})
    for argv in (("manifest", "verify", "--rev", "HEAD"), ("manifest", "verify"), ("score",)):
        one_line_exit_2(gate(repo, *argv), "MANIFEST.sha256", ":2: size has 4400 digits", "gate manifest sign")
    doctor = gate(repo, "doctor")
    assert doctor.returncode == 1 and "MANIFEST.sha256" in doctor.stdout and "Traceback" not in doctor.stderr


def test_a_hunk_header_with_4400_digit_line_numbers_is_a_malformed_patch(repo: Path) -> None:
    (repo / "p.diff").write_text(f"--- a/docs/a.txt\n+++ b/docs/a.txt\n@@ -1,{HUGE} +1 @@\n-doc\n+docs\n")
    proc = gate(repo, "admit", "p.diff", "--json")
    never_a_crash(proc)
    assert proc.returncode == 1 and "malformed hunk header" in proc.stdout, proc.stdout  # a canary miss: rejected


@pytest.mark.parametrize("where", ["gate.yaml", "-C", "--ledger"])
def test_a_path_too_long_for_the_file_system(repo: Path, where: str) -> None:
    long = "x" * 300 + ".yaml"
    if where == "gate.yaml":
        text = (repo / "gate.yaml").read_text().replace("ledger: freeze_ledger.yaml", f"ledger: {long}")
        (repo / "gate.yaml").write_text(text)
        proc = gate(repo, "init")
    elif where == "-C":
        proc = gate(repo, "-C", str(repo / long), "doctor")
    else:
        proc = gate(repo, "freeze", "list", "--ledger", long)
    one_line_exit_2(proc, "too long for the file system", "shorten it", "characters)")


def _edit_meta(repo: Path, cid: str, **fields: object) -> None:
    meta = repo / queue.QUEUE / cid / queue.META
    data = json.loads(meta.read_text())
    for key, value in fields.items():
        if key == "result":
            data["triage"]["result"] = value
        else:
            data[key] = value
    meta.chmod(0o644)
    meta.write_text(json.dumps(data))


@pytest.mark.parametrize("result", [None, 7, ["pass"], {"x": 1}])
def test_a_queue_entry_whose_triage_result_is_not_text(repo: Path, result: object) -> None:
    cid = enqueue(repo)
    _edit_meta(repo, cid, result=result)
    for argv in (("list",), ("list", "--json"), ("show", cid[:8]), ("accept", cid[:8], "--reviewed")):
        one_line_exit_2(gate(repo, "queue", *argv), "meta.json", "triage result must be text")


@pytest.mark.parametrize("other", ["a" * 64, "A" * 64, "../x", ""])
def test_a_queue_entry_whose_id_is_not_its_folder(repo: Path, other: str) -> None:
    cid = enqueue(repo)
    _edit_meta(repo, cid, id=other)
    for argv in (("list",), ("show", cid[:8]), ("accept", cid[:8], "--reviewed"), ("reject", cid[:8], "--reason", "r")):
        one_line_exit_2(gate(repo, "queue", *argv), "meta.json", "is not its folder's name")
    assert not list((repo / "oracles/properties").glob("test_shop_*"))  # nothing installed


def test_a_queue_folder_whose_name_is_not_an_id(repo: Path) -> None:
    cid = enqueue(repo)
    (repo / queue.QUEUE / cid).rename(repo / queue.QUEUE / "not-an-id")
    one_line_exit_2(gate(repo, "queue", "list"), "meta.json", "is not its folder's name")


LEDGER_HEAD = "version: 1\nbudget: {max_active: 3, max_added_per_patch: 1}\n"
BAD_LEDGERS = {
    "out-of-range date": (LEDGER_HEAD + "entries:\n- id: FZ-1\n  prop_id: p\n  paths: [src/**]\n"
                          "  expires_at: 2026-13-45\n  opened_by: a\n  reason: r\n", ":7", "month must be in 1..12"),
    "recursive alias": ("version: 1\nbudget: &a {max_active: 3, max_added_per_patch: *a}\nentries: []\n", ":2",
                        "alias"),
    "huge number": ("version: 1\nbudget: {max_active: " + HUGE + ", max_added_per_patch: 1}\nentries: []\n", ":2",
                    "cannot read"),
}


@pytest.mark.parametrize("kind", BAD_LEDGERS)
def test_gate_score_over_a_broken_ledger_is_the_one_line_error(repo: Path, kind: str) -> None:
    text, line, words = BAD_LEDGERS[kind]
    _commit_unchecked(repo, {"freeze_ledger.yaml": text})
    proc = gate(repo, "score")
    one_line_exit_2(proc, f"freeze_ledger.yaml (at {git(repo, 'rev-parse', 'HEAD').stdout.strip()}){line}", words)
    assert proc.stdout == ""  # no scorecard
    one_line_exit_2(gate(repo, "freeze", "list"), f"freeze_ledger.yaml{line}", words)  # the same error


# ---------------------------------------------------------------- every YAML file through every command

BAD_YAML = {"alias": "version: &a 1\nx: *a\n", "date": "version: 1\nx: 2026-13-45\n",
            "huge": f"version: 1\nx: {HUGE}\n"}
DIFF = "--- a/docs/a.txt\n+++ b/docs/a.txt\n@@ -1 +1 @@\n-docs\n+doc\n"
RANGE = ("--base", "HEAD^", "--head", "HEAD")
# The file broken on the trusted side (committed, then a docs-only patch on top), and each command that
# reads it from there: the one-line error naming the file and line, exit 2.
READERS: dict[str, list[tuple[str, ...]]] = {
    "gate.yaml": [("score",), ("check", *RANGE), ("diff", *RANGE), ("run", "--rev", "HEAD"), ("admit", "p.diff"),
                  ("manifest", "verify"), ("manifest", "sign"), ("catalog", "status"), ("test",), ("hook", "all"),
                  ("init",), ("commit", "--split", "-m", "x")],
    "freeze_ledger.yaml": [("score",), ("check", *RANGE), ("freeze", "list"), ("freeze", "lint")],
    "oracles/catalog/claimed.yaml": [("score",), ("check", *RANGE), ("diff", *RANGE), ("run", "--rev", "HEAD"),
                                     ("catalog", "status")],
}
# Commands that report rather than stop: exit 1, the file and line named in what they print.
REPORTERS: dict[str, list[tuple[str, ...]]] = {
    "gate.yaml": [("doctor",)],
    "freeze_ledger.yaml": [("doctor",)],
    "oracles/catalog/claimed.yaml": [("doctor",)],
}


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    repos = {}
    for name in READERS:
        for kind, text in BAD_YAML.items():
            path = init_repo(tmp_path_factory.mktemp("yaml") / "repo")
            commit(path, {"src/shop.py": SHOP, "docs/a.txt": "doc\n"}, "production")
            _commit_unchecked(path, {name: text}, "broken")
            _commit_unchecked(path, {"docs/a.txt": "docs\n", "p.diff": DIFF}, "docs")
            repos[name, kind] = path
    return repos


@pytest.mark.parametrize(("name", "argv"), [(n, a) for n, cmds in READERS.items() for a in cmds],
                         ids=[f"{n}-{' '.join(a[:2])}" for n, cmds in READERS.items() for a in cmds])
def test_every_yaml_file_through_every_command_that_reads_it(broken: dict[tuple[str, str], Path], name: str,
                                                              argv: tuple[str, ...]) -> None:
    for kind in BAD_YAML:
        proc = gate(broken[name, kind], *argv)
        one_line_exit_2(proc, name, ":2")


@pytest.mark.parametrize(("name", "argv"), [(n, a) for n, cmds in REPORTERS.items() for a in cmds],
                         ids=[f"{n}-{' '.join(a[:2])}" for n, cmds in REPORTERS.items() for a in cmds])
def test_every_yaml_file_through_every_command_that_reports_it(broken: dict[tuple[str, str], Path], name: str,
                                                                argv: tuple[str, ...]) -> None:
    for kind in BAD_YAML:
        proc = gate(broken[name, kind], *argv)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
        assert f"{name}:2" in proc.stdout + proc.stderr or f"{name} (at " in proc.stdout + proc.stderr, proc.stdout


# ---------------------------------------------------------------- every JSON file: null and huge fields

META_FIELDS = [f for f in queue.Meta.__dataclass_fields__]


@pytest.mark.parametrize("value", ["null", "123456789012345678", HUGE, "[]"], ids=["null", "number", "huge", "list"])
@pytest.mark.parametrize("field", META_FIELDS)
def test_every_queue_entry_field_null_or_a_number(repo: Path, field: str, value: str) -> None:
    cid = enqueue(repo)
    meta = repo / queue.QUEUE / cid / queue.META
    text = json.dumps({**json.loads(meta.read_text()), field: "__V__"}).replace('"__V__"', value)
    meta.chmod(0o644)
    meta.write_text(text)
    for argv in (("list",), ("show", cid[:8])):
        one_line_exit_2(gate(repo, "queue", *argv), "meta.json", "4300" if value == HUGE else field)


JOURNAL_BREAKS = {
    "null document": "null", "null paths": '{"version": 1, "paths": null}',
    "null state": '{"version": 1, "paths": {"oracles/x.py": null}}',
    "null data with a mode": '{"version": 1, "paths": {"oracles/x.py": {"data": null, "mode": 420, "index": null}}}',
    "huge mode": '{"version": 1, "paths": {"oracles/x.py": {"data": "eA==", "mode": ' + HUGE + ', "index": null}}}',
    "number for data": '{"version": 1, "paths": {"oracles/x.py": {"data": 7, "mode": 420, "index": null}}}',
    "not base64": '{"version": 1, "paths": {"oracles/x.py": {"data": "!!", "mode": 420, "index": null}}}',
    "an index line": '{"version": 1, "paths": {"oracles/x.py": {"data": null, "mode": null, '
                     '"index": "100644 x\\u0000evil"}}}',
    "outside the tree": '{"version": 1, "paths": {"../x.py": {"data": null, "mode": null, "index": null}}}',
    "not JSON": "{",
}


@pytest.mark.parametrize("kind", JOURNAL_BREAKS)
def test_a_broken_accept_journal_is_the_one_line_error_and_touches_nothing(repo: Path, kind: str) -> None:
    cid = enqueue(repo)
    (repo / queue.QUEUE / cid / journal.JOURNAL).write_text(JOURNAL_BREAKS[kind])
    before = git(repo, "status", "--porcelain", "--untracked-files=all").stdout
    for argv in (("accept", cid[:8], "--reviewed"), ("reject", cid[:8], "--reason", "r")):
        one_line_exit_2(gate(repo, "queue", *argv), journal.JOURNAL)
    assert git(repo, "status", "--porcelain", "--untracked-files=all").stdout == before
    assert not (repo.parent / "x.py").exists()


ROW = {"prop": "prop.x", "seed": 1, "status": "pass"}


@pytest.mark.parametrize("value", ["null", HUGE, "[]", "{}"], ids=["null", "huge", "list", "object"])
@pytest.mark.parametrize("field", ["prop", "seed", "status", "witness", "signature", "examples", "duration_s",
                                   "fixture_digest"])
def test_every_run_row_field_null_or_huge(repo: Path, field: str, value: str) -> None:
    row = json.dumps({**ROW, field: "__V__"}).replace('"__V__"', value)
    write(repo, {"runs.jsonl": row + "\n", "contract.json": '{"seeds": [1], "properties": ["prop.x"]}'})
    proc = gate(repo, "verdict", "--contract", "contract.json", "--runs", "runs.jsonl", "--base-runs", "runs.jsonl")
    never_a_crash(proc)
    if proc.returncode == 2:
        one_line_exit_2(proc, "runs.jsonl:1")


@pytest.mark.parametrize("value", ["null", HUGE, "[null]", f"[{HUGE}]", '{"x": null}'])
@pytest.mark.parametrize("field", ["seeds", "properties", "base", "x"])
def test_every_contract_field_null_or_huge(repo: Path, field: str, value: str) -> None:
    contract = json.dumps({"seeds": [1], "properties": ["prop.x"], field: "__V__"}).replace('"__V__"', value)
    write(repo, {"runs.jsonl": "", "contract.json": contract})
    proc = gate(repo, "verdict", "--contract", "contract.json", "--runs", "runs.jsonl", "--base-runs", "runs.jsonl")
    never_a_crash(proc)
    if proc.returncode == 2:
        one_line_exit_2(proc, "contract.json")


# ---------------------------------------------------------------- bounded memory on the trusted side

PEAK = """
import sys
from mergegate import main
try:
    code = main.main(sys.argv[1:])
finally:
    print(next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith("VmHWM:")), file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.parametrize(("lines", "words"), [(20_000_000, "MiB"), (300_000, "lines, over the 250000")],
                         ids=["40 MB", "300k lines"])
def test_gate_check_refuses_a_patch_too_big_to_read_in_bounded_memory(repo: Path, lines: int, words: str) -> None:
    import sys

    from tests.helpers import clean_env

    _commit_unchecked(repo, {"docs/big.txt": b"x\n" * lines}, "a big docs file")
    proc = subprocess.run([sys.executable, "-c", PEAK, "check", "--base", "HEAD^", "--head", "HEAD", "--json"],
                          cwd=repo, env=clean_env(), capture_output=True, text=True, check=False)
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    assert out["reason"] == "canary_bad", out
    assert any(c["name"] == "parse_diff" and not c["ok"] and words in c["detail"] for c in out["canaries"]), out
    peak_mb = int(proc.stderr.strip().splitlines()[-1]) / 1024
    assert peak_mb < 300, peak_mb  # before: 3.5 GB for 25 MB of such lines
