"""One YAML loader for every file the gate reads: aliases, tags, depth and size are bounded; errors are one line."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mergegate.demo import build
from mergegate.errors import ConfigError
from mergegate.records import catalog, ledger, policy, yamlio
from tests.helpers import clean_env, gate

# About 700 bytes: nine levels of nine aliases each, 9**9 strings once expanded.
BOMB = "version: 1\n" + 'lol1: &lol1 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + "".join(
    f"lol{n + 1}: &lol{n + 1} [{', '.join([f'*lol{n}'] * 9)}]\n" for n in range(1, 9)
) + "entries: *lol9\n"

REFUSED = [
    ("alias bomb", BOMB, 3, "alias *lol1"),
    ("recursive alias", "version: 1\nentries: &e [*e]\n", 2, "alias *e"),
    ("merge key", "version: 1\nx: &x {a: 1}\nbudget: {<<: *x}\n", 3, "alias *x"),
    ("explicit timestamp", "version: 1\nwhen: !!timestamp x\n", 2, "timestamp"),
    ("top-level timestamp", "!!timestamp x\n", 1, "timestamp"),
    ("python object", "version: !!python/object/apply:os.system ['true']\n", 1, "python/object"),
    ("binary", "version: !!binary aGk=\n", 1, "binary"),
    ("local tag", "version: !mine 1\n", 1, "!mine"),
    ("out-of-range date", "version: 1\nwhen: 2026-13-45\n", 2, "month must be in 1..12"),
    ("huge integer", "version: " + "9" * 5000 + "\n", 1, "4300"),
    ("bad float tag value", "version: !!float one\n", 1, "cannot read"),
    ("deep nesting", "version: " + "[" * 100 + "]" * 100 + "\n", 1, "nested deeper"),
    ("not UTF-8", b"version: 1\nx: \xff\xfe\n", 2, "UTF-8"),
    ("control character", "version: 1\nx: \x01\n", 2, "special characters"),
    ("unclosed flow", "version: [1,\n  2\n", 3, "expected"),
    ("two documents", "version: 1\n---\nversion: 2\n", 2, "single document"),
]


@pytest.mark.parametrize(("name", "text", "line", "words"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_yaml_is_one_line_with_file_line_and_fix(name: str, text: str | bytes, line: int, words: str) -> None:
    started = time.monotonic()
    with pytest.raises(ConfigError) as info:
        yamlio.load(text, "f.yaml")
    assert time.monotonic() - started < 2
    rendered = info.value.render()
    assert info.value.line == line, rendered
    assert rendered.startswith(f"f.yaml:{line}: ") and "fix: " in rendered and words in rendered, rendered
    assert "\n" not in rendered


def test_bomb_is_small() -> None:
    assert 650 <= len(BOMB) <= 720


def test_size_cap() -> None:
    with pytest.raises(ConfigError, match="over the 100-byte limit"):
        yamlio.load("x: " + "a" * 200 + "\n", "f.yaml", max_bytes=100)


def test_every_file_kind_uses_the_bounded_loader() -> None:
    for parse in (ledger.parse, policy.parse):
        with pytest.raises(ConfigError, match="alias"):
            parse("version: 1\nx: &x 1\ny: *x\n", "f.yaml")
    with pytest.raises(ConfigError, match="alias"):
        catalog.parse_entry(b"id: &x prop.a\nfunction: *x\n", "oracles/catalog/prop.a.yaml")


def test_plain_tags_and_anchors_without_aliases_still_load() -> None:
    doc = yamlio.load("a: !!str 1\nb: &b [1, 2]\nc: !!int '3'\n", "f.yaml")
    assert doc.data == {"a": "1", "b": [1, 2], "c": 3}


def test_a_multi_line_message_renders_as_one_line() -> None:
    assert ConfigError("f", 1, "a\n  in b", "c\nd").render() == "f:1: a in b; fix: c d"


def _bounded(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    def limit() -> None:  # 600 MB of address space: the old loader needed 1.5 GB for this bomb
        resource.setrlimit(resource.RLIMIT_AS, (600 << 20, 600 << 20))

    return subprocess.run(cmd, cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=60,
                          preexec_fn=limit, check=False)


def test_alias_bomb_ledger_on_disk_is_a_one_line_exit_2(tmp_path: Path) -> None:
    repo = build.build(tmp_path)
    (repo / "freeze_ledger.yaml").write_text(BOMB)
    started = time.monotonic()
    proc = _bounded([sys.executable, "-m", "mergegate", "freeze", "lint"], repo)
    assert proc.returncode == 2, proc.stderr
    assert time.monotonic() - started < 10
    assert proc.stderr.count("\n") == 1 and "freeze_ledger.yaml:3" in proc.stderr and "fix:" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("text", ["version: 1\nentries: &e [*e]\n", "version: 1\nbudget: !!timestamp x\n",
                                  "version: 1\nentries: [{expires: 2026-02-31}]\n"])
def test_freeze_list_refuses_in_one_line(tmp_path: Path, text: str) -> None:
    repo = build.build(tmp_path)
    (repo / "freeze_ledger.yaml").write_text(text)
    proc = gate(repo, "freeze", "list")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "freeze_ledger.yaml:2" in proc.stderr and "fix:" in proc.stderr


def test_alias_bomb_ledger_in_an_agent_patch_through_gate_check(tmp_path: Path) -> None:
    repo = build.build(tmp_path)
    build.git(repo, "checkout", "-q", "-B", "bomb", "main")
    head = build.commit(repo, {"freeze_ledger.yaml": BOMB}, "freeze everything", agent=True)
    build.git(repo, "checkout", "-q", "main")
    started = time.monotonic()
    proc = _bounded([sys.executable, "-m", "mergegate", "check", "--base", "main", "--head", head, "--json"], repo)
    elapsed = time.monotonic() - started
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the gate's no: an agent may not touch the ledger
    assert "Traceback" not in proc.stderr
    assert elapsed < 30
