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
