"""Path classes and the pure classifier, with no heavy imports (the hook fast path uses it)."""

from __future__ import annotations

from collections.abc import Sequence

from mergegate.rules import globs

PRODUCTION, ORACLE, FIXTURE, CATALOG = "production", "oracle", "fixture", "catalog"
MANIFEST, LEDGER, POLICY, OTHER = "manifest", "ledger", "policy", "other"
CLASSES = (PRODUCTION, ORACLE, FIXTURE, CATALOG, MANIFEST, LEDGER, POLICY, OTHER)
GUARDED = frozenset({ORACLE, FIXTURE, CATALOG, MANIFEST, LEDGER, POLICY})
# Everything the manifest signs: guarded, but not the manifest itself nor the ledger
# (the ledger changes by a person's hand between oracle commits and has its own rules).
SIGNED = frozenset({ORACLE, FIXTURE, CATALOG, POLICY})
# ``paths.policy``'s default: what configures the gate or the runner, the CI definitions that run the gate
# and the files they call, Python's start-up hooks, and git's attributes.  A file here is guarded: an agent's
# patch that touches one is rejected (``oracle_edited_by_agent``), a person's goes in an oracle-only commit.
CI_DEFINITIONS = (".github/**", ".gitlab-ci.yml", ".gitlab/**", ".circleci/**", ".buildkite/**", "Jenkinsfile",
                  "azure-pipelines.yml", ".travis.yml", "bitbucket-pipelines.yml", ".woodpecker.yml", ".woodpecker/**",
                  ".drone.yml")
CI_CALLS = ("noxfile.py", "tox.ini", "Makefile", "makefile", "GNUmakefile", "justfile", "Justfile", ".justfile",
            "Taskfile.yml")
STARTUP_HOOKS = ("sitecustomize.py", "usercustomize.py", "*.pth")
DEFAULT_POLICY = ("gate.yaml", ".pre-commit-config.yaml", "conftest.py", "pytest.ini", ".ci/**", *CI_DEFINITIONS,
                  *CI_CALLS, *STARTUP_HOOKS, ".gitattributes")
POLICY_FILE = "gate.yaml"  # always policy: a gate.yaml that drops itself from paths.policy stays guarded


def classify(
    path: str,
    *,
    production: Sequence[str],
    oracle: Sequence[str],
    fixtures: Sequence[str],
    catalog: str,
    manifest: str,
    ledger: str,
    policy: Sequence[str],
) -> str:
    """The class of one path.  Order matters: a path matching a guarded class is guarded."""
    if path == manifest:
        return MANIFEST
    if path == ledger:
        return LEDGER
    if path == POLICY_FILE or globs.matches(path, policy):
        return POLICY
    if path == catalog or path.startswith(catalog.rstrip("/") + "/"):
        return CATALOG
    if globs.matches(path, fixtures):
        return FIXTURE
    if globs.matches(path, oracle):
        return ORACLE
    if globs.matches(path, production):
        return PRODUCTION
    return OTHER
