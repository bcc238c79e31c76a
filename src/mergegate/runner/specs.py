"""What the trusted revision says: each property's oracle bytes, the oracle tree, production's names.

Everything here is read from git blobs of the trusted revision (the merge-base
in ``gate check``), never from a work tree.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mergegate.errors import ConfigError
from mergegate.git import blobs as git_blobs
from mergegate.git import core as git_core
from mergegate.records import catalog, nodeids, yamlio
from mergegate.records.policy import FIXTURE, GUARDED, ORACLE, PRODUCTION, Policy
from mergegate.runner import comparisons
from mergegate.runner.trees import import_roots

# Names the trusted side never hands to production: the standard library (the subject
# resolves these to the standard library too, so a production module so named is dead code).
NEVER_PRODUCTION = frozenset(sys.stdlib_module_names) | {"__future__"}


@dataclass(frozen=True)
class Trusted:
    """The trusted revision's oracle and fixture files, and the names production owns there."""

    rev: str
    files: Mapping[str, bytes] = field(default_factory=dict)
    production_names: frozenset[str] = frozenset()
    comparisons: Mapping[str, Any] = field(default_factory=dict)  # ``comparisons.py``'s table


@dataclass(frozen=True)
class Spec:
    """One property as the trusted revision defines it."""

    prop: catalog.Property
    source: bytes
    spec_hash: str
    trusted: Trusted = field(default_factory=lambda: Trusted(""))
    kind: str = nodeids.HYPOTHESIS  # nodeids.PLAIN: deterministic, one run per side (seeds do not apply)

    @property
    def seeds_apply(self) -> bool:
        return self.kind != nodeids.PLAIN


def load_specs(rev: str, policy: Policy, cwd: str | Path | None = None) -> tuple[catalog.Catalog, list[Spec]]:
    """The catalog and each property's trusted oracle bytes at ``rev``; bad entries are errors."""
    cat = catalog.load_at(rev, policy.paths.catalog, None if cwd is None else str(cwd))
    listing = [e for e in git_blobs.ls_tree(rev, cwd) if not e.is_submodule]
    entries = {e.path: e for e in listing}
    oracle_paths = [e.path for e in listing if trusted_file(e.path, policy)]
    wanted = {entries[p].sha for prop in cat.properties for p in (prop.source, prop.oracle_file) if p in entries}
    wanted |= {entries[p].sha for p in oracle_paths if not entries[p].is_symlink}
    blobs = dict(git_blobs.read_blobs(wanted, cwd))
    trusted = Trusted(
        rev,
        {p: blobs[entries[p].sha] for p in oracle_paths if not entries[p].is_symlink},
        frozenset(production_names((e.path for e in listing), policy)),
        comparison_table(rev, listing, policy, cwd),
    )
    specs = []
    for prop in cat.properties:
        entry_bytes = blobs[entries[prop.source].sha]
        oracle = entries.get(prop.oracle_file)
        if oracle is None:
            line = yamlio.load(entry_bytes, prop.source).line(("oracle",))
            raise ConfigError(prop.source, line, f"oracle file {prop.oracle_file} does not exist at {rev[:12]}",
                              "commit the oracle file or fix the catalog entry's oracle: path")
        source = blobs[oracle.sha]
        kind = check_function(prop, source, entry_bytes)
        specs.append(Spec(prop, source, catalog.spec_hash(entry_bytes, source), trusted, kind))
    return cat, specs


def trusted_file(path: str, policy: Policy) -> bool:
    """Written into the trusted oracle tree: oracle and fixture files, and every guarded ``conftest.py``
    (a policy file, wherever it sits: pytest loads it for the tests below it)."""
    kind = policy.classify(path)
    return kind in (ORACLE, FIXTURE) or (kind in GUARDED and path.rpartition("/")[2] == "conftest.py")


def check_function(prop: catalog.Property, source: bytes, entry_bytes: bytes) -> str:
    """The oracle file must parse and define the test the node id names; its kind (nodeids.PLAIN/HYPOTHESIS)."""
    try:
        return nodeids.resolve(prop.node_id, source)
    except nodeids.NodeIdError as exc:
        line = yamlio.load(entry_bytes, prop.source).line(("oracle",))
        raise ConfigError(prop.source, line, str(exc), "name a test the oracle file defines "
                          "(gate catalog status lists them)") from None


def production_names(paths: Iterable[str], policy: Policy) -> set[str]:
    """Top-level import names of the production files among ``paths`` (``src/shop/tax.py`` -> shop).

    Read from the trusted revision: a patch cannot make an oracle's import of a
    third-party or helper module resolve to production code by adding a module
    of that name.
    """
    every = frozenset(paths)
    roots = sorted(import_roots(policy.paths.production, every.__contains__), key=len, reverse=True)
    names = set()
    for path in every:
        if not path.endswith((".py", ".so", ".pyd")) or policy.classify(path) != PRODUCTION:
            continue
        root = next((r for r in roots if not r or path.startswith(r + "/")), None)
        if root is None:
            continue
        name = (path[len(root) + 1:] if root else path).split("/")[0].split(".")[0]
        if name.isidentifier() and name not in NEVER_PRODUCTION:
            names.add(name)
    return names


def comparison_table(rev: str, listing: list[git_blobs.Entry], policy: Policy,
                     cwd: str | Path | None) -> dict[str, Any]:
    """How the trusted revision's production classes compare (``comparisons.py``), from the files that
    mention a comparison method (one ``git grep``, then one batch of blobs)."""
    production = {e.path: e.sha for e in listing if not e.is_symlink and not e.is_submodule
                  and is_production_source(e.path, policy)}
    if not production:
        return {}
    found = git_core.run(["grep", "-l", "-z", "-I", "-E", comparisons.PATTERN, rev, "--"], cwd, check=False)
    prefix = rev + ":"
    hits = [p[len(prefix):] for p in git_core.zsplit(found.stdout) if p.startswith(prefix)]
    wanted = {p: production[p] for p in hits if p in production}
    blobs = dict(git_blobs.read_blobs(wanted.values(), cwd))
    return comparison_rows({p: blobs[sha] for p, sha in wanted.items()}, production, policy)


def comparison_rows(files: Mapping[str, bytes], paths: Iterable[str], policy: Policy) -> dict[str, Any]:
    """The table over production ``files`` (path -> source) of a tree whose files are ``paths``."""
    from mergegate.runner import comparison_cache

    roots = import_roots(policy.paths.production, frozenset(paths).__contains__)
    return comparisons.table(dict(files), roots, comparison_cache.read_module)


def is_production_source(path: str, policy: Policy) -> bool:
    return path.endswith(".py") and policy.classify(path) == PRODUCTION


def production_imports(sources: Iterable[bytes], names: frozenset[str]) -> list[str]:
    """Absolute imports of production modules in the oracle sources (preloaded by the subject)."""
    found = [name for source in sources for name in nodeids.imported_modules(source, members=False)]
    return [n for n in dict.fromkeys(found) if n.partition(".")[0] in names]
