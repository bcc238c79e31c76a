"""The property catalog: ``<catalog>/<id>.yaml`` plus ``claimed.yaml``.

Loaded from a trusted revision (the base), never from the patch.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from mergegate.errors import ConfigError
from mergegate.records import nodeids, yamlio
from mergegate.rules import globs

CLAIMED_FILE = "claimed.yaml"
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")
_KEYS = ("id", "oracle", "claim", "canary", "quarantine_eligible", "fixtures", "max_examples", "covers",
         "isolation", "allow_skip")
ISOLATIONS = ("sealed", "shared")


@dataclass(frozen=True)
class Property:
    """One catalog entry."""

    id: str
    oracle_file: str
    oracle_function: str  # the node id after the file: test_y, TestX::test_y, test_y[a-1], TestMachine
    claim: str
    canary: bool = False
    quarantine_eligible: bool = False
    fixtures: tuple[str, ...] = ()
    max_examples: int = 100
    covers: tuple[str, ...] = ()
    source: str = ""  # the catalog file this entry came from
    isolation: str = "sealed"  # shared: a person decided it cannot run sealed (production in its process)
    allow_skip: bool = False  # a person's choice: a skipped instance is not a fail if another one ran and passed

    @property
    def node_id(self) -> nodeids.NodeId:
        return nodeids.parse(self.oracle)

    @property
    def oracle(self) -> str:
        return f"{self.oracle_file}::{self.oracle_function}"

    def uses_fixture(self, path: str) -> bool:
        return globs.matches(path, self.fixtures)


@dataclass(frozen=True)
class Catalog:
    properties: tuple[Property, ...]
    claimed: tuple[str, ...]

    def by_id(self) -> dict[str, Property]:
        return {p.id: p for p in self.properties}

    def by_nodeid(self) -> dict[str, str]:
        """Node id -> catalog id (seed 004's ``test_nodeid`` is a catalog entry's ``oracle``)."""
        return {p.oracle: p.id for p in self.properties}


def parse_entry(text: str | bytes, source: str) -> Property:
    """Validate one ``<id>.yaml``."""
    doc = yamlio.load(text, source)
    raw = yamlio.check_keys(doc, (), doc.data, _KEYS, required=("id", "oracle", "claim"))
    pid = yamlio.expect(doc, ("id",), raw["id"], str, "a property id")
    if not _ID.fullmatch(pid):
        raise doc.error(("id",), f"bad property id {pid!r}", "use letters, digits, '.', '_' and '-'")
    oracle = yamlio.expect(doc, ("oracle",), raw["oracle"], str, "path/to/file.py::test_function")
    try:
        node_id = nodeids.parse(oracle)
    except nodeids.NodeIdError as exc:
        raise doc.error(("oracle",), str(exc), "write a pytest node id: path/to/test_x.py::test_y, "
                        "path/to/test_x.py::TestClass::test_y or path/to/test_x.py::test_y[param]") from None
    claim = yamlio.expect(doc, ("claim",), raw["claim"], str, "a one-line claim")
    flags = {}
    for key in ("canary", "quarantine_eligible", "allow_skip"):
        if key in raw:
            flags[key] = yamlio.expect(doc, (key,), raw[key], bool, "true or false")
    max_examples = raw.get("max_examples", 100)
    yamlio.expect(doc, ("max_examples",), max_examples, int, "a positive whole number")
    if max_examples <= 0:
        raise doc.error(("max_examples",), "max_examples must be positive", "write e.g. 100")
    isolation = raw.get("isolation", "sealed")
    if isolation not in ISOLATIONS:
        raise doc.error(("isolation",), f"bad isolation {isolation!r}",
                        "write isolation: sealed (the default) or isolation: shared")
    return Property(
        id=pid,
        isolation=isolation,
        oracle_file=node_id.file,
        oracle_function=node_id.rest,
        claim=claim,
        fixtures=yamlio.str_list(doc, ("fixtures",), raw.get("fixtures") or []),
        max_examples=max_examples,
        covers=yamlio.str_list(doc, ("covers",), raw.get("covers") or []),
        source=source,
        **flags,
    )


def parse_claimed(text: str | bytes, source: str) -> tuple[str, ...]:
    doc = yamlio.load(text, source)
    raw = yamlio.check_keys(doc, (), doc.data or {}, ("claimed",))
    return yamlio.str_list(doc, ("claimed",), raw.get("claimed") or [])


def build(files: Mapping[str, bytes], catalog_dir: str) -> Catalog:
    """A catalog from ``{path: bytes}`` of the files under ``catalog_dir``."""
    props: list[Property] = []
    claimed: tuple[str, ...] | None = None
    claimed_path = f"{catalog_dir}/{CLAIMED_FILE}"
    for path in sorted(files):
        if path == claimed_path:
            claimed = parse_claimed(files[path], path)
        elif path.endswith((".yaml", ".yml")):
            props.append(parse_entry(files[path], path))
    seen: dict[str, str] = {}
    for prop in props:
        if prop.id in seen:
            raise ConfigError(
                prop.source, 1, f"property id {prop.id!r} also in {seen[prop.id]}", "give each property its own id"
            )
        seen[prop.id] = prop.source
    if claimed is None:
        claimed = tuple(p.id for p in props)
    for pid in claimed:
        if pid not in seen:
            raise ConfigError(
                claimed_path, None, f"claimed id {pid!r} has no catalog entry",
                f"add {catalog_dir}/{pid}.yaml or drop the claim",
            )
    return Catalog(tuple(props), claimed)


def load_at(rev: str | None, catalog_dir: str, cwd: str | None = None) -> Catalog:
    """The catalog at a revision (None: the index in use), read from git blobs."""
    from mergegate.git import blobs as git_blobs

    entries = git_blobs.ls_index(cwd) if rev is None else git_blobs.ls_tree(rev, cwd)
    prefix = catalog_dir.rstrip("/") + "/"
    mine = [e for e in entries if e.path.startswith(prefix) and not e.is_submodule]
    blobs = dict(git_blobs.read_blobs((e.sha for e in mine), cwd))
    return build({e.path: blobs[e.sha] for e in mine}, catalog_dir.rstrip("/"))


# ---- runner: spec and fixture closure hashes (issue 4)


def spec_hash(entry: bytes | None, oracle: bytes | None) -> str:
    """sha256 of a catalog entry's bytes plus its oracle file's bytes (None: absent)."""
    import hashlib

    hasher = hashlib.sha256()
    for label, data in ((b"catalog", entry), (b"oracle", oracle)):
        hasher.update(label + (b"-" if data is None else b"+%d:" % len(data)))
        hasher.update(data or b"")
    return hasher.hexdigest()


def fixture_closure(prop: Property, files: Mapping[str, bytes]) -> str:
    """sha256 over the paths and bytes of the files ``prop`` declares, in path order."""
    import hashlib

    hasher = hashlib.sha256()
    for path in sorted(p for p in files if prop.uses_fixture(p)):
        hasher.update(path.encode("utf-8", "surrogateescape") + b"\0")
        hasher.update(b"%d:" % len(files[path]) + files[path] + b"\0")
    return hasher.hexdigest()
