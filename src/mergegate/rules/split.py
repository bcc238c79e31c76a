"""The diff split: each changed path into its class (pure).

A rename is a delete plus an add (``--no-renames``), so it counts on both
sides.  A deletion, a mode change, a symlink or a submodule on a guarded path
is simply a change of that path, so it lands in the guarded class too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mergegate.rules.pathclass import CLASSES, GUARDED, ORACLE, PRODUCTION
from mergegate.rules.shapes import CatalogView, Changed, Classifies


@dataclass(frozen=True)
class Split:
    """Changed paths by class; every class key is present."""

    classes: dict[str, tuple[str, ...]]

    @property
    def guarded(self) -> tuple[str, ...]:
        return tuple(sorted(p for c in GUARDED for p in self.classes[c]))

    @property
    def production(self) -> tuple[str, ...]:
        return self.classes[PRODUCTION]

    @property
    def mixed(self) -> bool:
        """Guarded and production paths in one change: the rule every hook enforces."""
        return bool(self.guarded) and bool(self.production)

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(sorted(p for ps in self.classes.values() for p in ps))

    def of(self, cls: str) -> tuple[str, ...]:
        return self.classes[cls]


def split_paths(paths: Iterable[str], policy: Classifies, classify: Callable[[str], str] | None = None) -> Split:
    """Bucket ``paths`` by class; ``classify`` defaults to the policy's (pass a memoized one when hot)."""
    classify = classify or policy.classify
    buckets: dict[str, list[str]] = {c: [] for c in CLASSES}
    for path in sorted(set(paths)):
        buckets[classify(path)].append(path)
    return Split({c: tuple(ps) for c, ps in buckets.items()})


def split(changes: Iterable[Changed], policy: Classifies) -> Split:
    """Classify the paths of ``changes`` under ``policy``."""
    return split_paths((c.path for c in changes), policy)


def oracle_edited(catalog: CatalogView, split_: Split) -> tuple[str, ...]:
    """Catalog ids whose oracle file, declared fixtures or catalog entry changed.

    An oracle-tree file that is no property's own file (a shared helper module)
    may be imported by any property, so its change moves every oracle.
    """
    touched = set(split_.paths)
    own_files = {p.oracle_file for p in catalog.properties}
    shared_helper_changed = any(p not in own_files for p in split_.of(ORACLE))
    edited = []
    for prop in catalog.properties:
        if (
            shared_helper_changed
            or prop.oracle_file in touched
            or prop.source in touched
            or any(prop.uses_fixture(p) for p in touched)
        ):
            edited.append(prop.id)
    return tuple(sorted(edited))


def to_json(split_: Split, edited: Iterable[str] = ()) -> dict[str, object]:
    """The JSON ``gate split`` prints: one list per class plus ``oracle_edited``."""
    data: dict[str, object] = {c: list(split_.classes[c]) for c in CLASSES}
    data["guarded"] = list(split_.guarded)
    data["mixed"] = split_.mixed
    data["oracle_edited"] = sorted(edited)
    return data
