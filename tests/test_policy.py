"""gate.yaml: schema, defaults, validation with file and line, and the pure classifier."""

from __future__ import annotations

import pytest

from mergegate.errors import ConfigError
from mergegate.records import policy
from mergegate.rules.globs import matches

DEFAULT = policy.parse(policy.DEFAULT_TEXT)


def test_default_text_is_the_default_policy() -> None:
    assert policy.Policy(source="gate.yaml") == DEFAULT


@pytest.mark.parametrize(
    ("path", "cls"),
    [
        ("src/shop/orders.py", "production"),
        ("src/conftest.py", "policy"),  # a conftest anywhere is policy: the runner could load it
        ("oracles/properties/test_total.py", "oracle"),
        ("oracles/fixtures/orders.json", "fixture"),
        ("oracles/catalog/prop.total.yaml", "catalog"),
        ("oracles/catalog/claimed.yaml", "catalog"),
        ("oracles/MANIFEST.sha256", "manifest"),
        ("freeze_ledger.yaml", "ledger"),
        ("gate.yaml", "policy"),
        (".pre-commit-config.yaml", "policy"),
        ("pytest.ini", "policy"),
        (".ci/run", "policy"),
        ("README.md", "other"),
        ("srcx/a.py", "other"),
        ("oracles/other.txt", "other"),
        ("src/we ird \"q\" ü\nname.py", "production"),
        ("oracles/properties/new\nline.py", "oracle"),
    ],
)
def test_classify(path: str, cls: str) -> None:
    assert DEFAULT.classify(path) == cls


def test_gate_yaml_stays_guarded_when_the_policy_list_drops_it() -> None:
    pol = policy.parse('version: 1\npaths: {policy: ["pytest.ini"]}\n')
    assert pol.classify("gate.yaml") == "policy"
    assert pol.classify("lib/gate.yaml") == "other"  # only the root file is the policy


def test_guarded_classes() -> None:
    assert {policy.PRODUCTION, policy.OTHER}.isdisjoint(policy.GUARDED)
    assert set(policy.CLASSES) - policy.GUARDED == {policy.PRODUCTION, policy.OTHER}


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("src/**", "src/a/b.py", True),
        ("src/**", "src", True),
        ("src/**", "srcx/a.py", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/a/b.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "a/b/c.py", True),
        ("conftest.py", "deep/dir/conftest.py", True),
        ("oracles/catalog", "oracles/catalog/x.yaml", True),
        ("oracles/catalog", "oracles/catalogue/x.yaml", False),
        ("file?.txt", "file1.txt", True),
        ("file[0-9].txt", "filex.txt", False),
    ],
)
def test_globs(pattern: str, path: str, hit: bool) -> None:
    assert matches(path, [pattern]) is hit


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("version: 1\npaths:\n  prod: []\n", 3, "unknown key 'prod' in paths"),
        ("version: 1\nverdict: {combiner: loose}\n", 2, "unknown combiner"),
        ("version: 1\nbudget:\n  max_active: three\n", 3, "must be a whole number"),
        ("version: 1\nbudget:\n  max_active: -1\n", 3, "must not be negative"),
        ("version: 1\npaths: [\n", 3, "not valid YAML"),
        ("version: 2\n", 1, "unsupported version"),
        ("paths: {}\n", 1, "lacks required key 'version'"),
        ("version: 1\nverdict: {seeds: [1, 1]}\n", 2, "without repeats"),
        ("version: 1\nverdict: {seeds: [1, true]}\n", 2, "must be an integer"),
        ("version: 1\ncanaries: {secret_markers: ['(']}\n", 2, "bad regular expression"),
        ("version: 1\nagents: {env: 'NOT A VAR'}\n", 2, "not a variable name"),
        ("version: 1\npaths: {catalog: ../outside}\n", 2, "relative path inside the repository"),
        ("version: 1\nversion: 1\n", 2, "duplicate key"),
        ("version: 1\nextra: 1\n", 2, "unknown key 'extra'"),
        ("", 1, "policy is empty"),
    ],
)
def test_bad_policy_names_file_line_and_fix(text: str, line: int, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        policy.parse(text, "gate.yaml")
    rendered = info.value.render()
    assert rendered.startswith(f"gate.yaml:{line}: "), rendered
    assert words in rendered
    assert "; fix: " in rendered
    assert info.value.exit_code == 2


def test_overrides_are_applied() -> None:
    pol = policy.parse(
        "version: 1\npaths:\n  production: [lib/**, app/**]\n  oracle: props/**\n"
        "agents: {authors: ['*@bots.example'], env: MY_AGENT}\nverdict: {combiner: lenient, seeds: [3]}\n"
    )
    assert pol.paths.production == ("lib/**", "app/**")
    assert pol.classify("props/x.py") == "oracle"
    assert pol.classify("src/x.py") == "other"
    assert pol.is_agent_author("a@bots.example")
    assert pol.verdict == policy.Verdict("lenient", (3,))


@pytest.mark.parametrize(
    ("email", "agent"),
    [
        ("coder[bot]@users.noreply.example", True),
        ("Dependabot[BOT]@example.com", True),
        ("pat@example.com", False),  # fnmatch would read [bot] as a class and match this
        ("bob@example.com", False),
        ("robot@example.com", False),
        ("", False),
    ],
)
def test_author_globs_treat_brackets_literally(email: str, agent: bool) -> None:
    assert DEFAULT.is_agent_author(email) is agent
