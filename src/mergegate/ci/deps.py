"""Dependencies without running the patch: what the trusted revision declares, and whether a head changes it.

The gate's environment imports production's dependencies (the sandboxed subject sees its site-packages),
so they are installed from the trusted revision's declarations, read with git, never by building the head
(``pip install .`` runs the head's build backend, arbitrary code, outside the sandbox).  A head that changes
the declarations ran against the base's dependencies: its run decides nothing either way (pure).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from typing import Any

from mergegate.errors import UsageError
from mergegate.rules import globs

DEPENDENCY_CHANGE = "dependency_change"
PYPROJECT = "pyproject.toml"
# Files that declare or pin dependencies, or build the project; any change to one is a dependency change.
FILES = ("requirements*.txt", "requirements/**", "constraints*.txt", "/setup.py", "Pipfile",
         "Pipfile.lock", "poetry.lock", "uv.lock", "pdm.lock", "pylock.toml", "pylock.*.toml", "environment.yml",
         "environment.yaml")
# pyproject.toml's tables that declare dependencies or the build: a change elsewhere (a tool's settings) is not one.
TABLES = (("project", "dependencies"), ("project", "optional-dependencies"), ("project", "dynamic"),
          ("build-system",), ("dependency-groups",), ("tool", "poetry", "dependencies"),
          ("tool", "poetry", "dev-dependencies"), ("tool", "poetry", "group"), ("tool", "poetry", "source"),
          ("tool", "uv"), ("tool", "pdm"), ("tool", "hatch", "envs"), ("tool", "setuptools", "dynamic"))
SETUP_CFG = "setup.cfg"
# setup.cfg's sections that declare dependencies (setuptools); [tool:pytest] and the like are not.
CFG_SECTIONS = ("options", "options.extras_require", "options.entry_points")
_OPTION = re.compile(r"\s*-")


def declaration_paths(changed: Iterable[str]) -> list[str]:
    """The changed paths that are dependency files (pyproject.toml and setup.cfg: by their content,
    ``content_changed``)."""
    return sorted(p for p in changed if globs.matches(p, FILES))


def tables(text: bytes | None) -> dict[str, Any] | None:
    """pyproject.toml's dependency tables ({} when absent); None when it does not parse (a change, to be safe)."""
    if text is None:
        return {}
    try:
        doc = tomllib.loads(text.decode())
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    out: dict[str, Any] = {}
    for path in TABLES:
        node: Any = doc
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if node is not None:
            out[".".join(path)] = node
    return out


def pyproject_changed(base: bytes | None, head: bytes | None) -> bool:
    old, new = tables(base), tables(head)
    return old is None or new is None or old != new


def cfg_sections(text: bytes | None) -> dict[str, dict[str, str]] | None:
    """setup.cfg's dependency sections ({} when absent); None when it does not parse (a change, to be safe)."""
    import configparser

    if text is None:
        return {}
    parser = configparser.RawConfigParser()
    try:
        parser.read_string(text.decode())
    except (UnicodeDecodeError, configparser.Error):
        return None
    return {name: dict(parser[name]) for name in CFG_SECTIONS if parser.has_section(name)}


def setup_cfg_changed(base: bytes | None, head: bytes | None) -> bool:
    old, new = cfg_sections(base), cfg_sections(head)
    return old is None or new is None or old != new


def judged_by_content(path: str) -> str | None:
    """pyproject.toml or setup.cfg (at the root): files whose dependency part alone counts."""
    name = path.rsplit("/", 1)[-1]
    if name == PYPROJECT:
        return PYPROJECT
    return SETUP_CFG if path == SETUP_CFG else None


def content_changed(path: str, base: bytes | None, head: bytes | None) -> bool:
    kind = judged_by_content(path)
    if kind == PYPROJECT:
        return pyproject_changed(base, head)
    return kind == SETUP_CFG and setup_cfg_changed(base, head)


def requirements(pyproject: bytes | None, extras: Iterable[str] = (), req_files: Mapping[str, bytes] | None = None,
                 source: str = PYPROJECT) -> list[str]:
    """The runtime requirements a trusted revision declares: ``[project] dependencies`` (plus the named
    optional groups) and requirement files' plain lines.  An option line (``-e .``, ``-r``, ``--index-url``)
    or a path is refused: it would install something other than a named distribution."""
    reqs: list[str] = []
    if pyproject is not None:
        try:
            project = tomllib.loads(pyproject.decode()).get("project", {})
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(f"{source}: does not parse at the trusted revision: {exc}",
                             "fix it in a person's commit on the base branch") from None
        reqs += _strings(project.get("dependencies", []), source, "[project] dependencies")
        optional = project.get("optional-dependencies", {})
        for extra in extras:
            if not isinstance(optional, dict) or extra not in optional:
                raise UsageError(f"{source}: no optional dependency group {extra!r}",
                                 "name a group of [project.optional-dependencies]")
            reqs += _strings(optional[extra], source, f"[project.optional-dependencies] {extra}")
    for name, data in sorted((req_files or {}).items()):
        for number, line in enumerate(data.decode(errors="replace").splitlines(), 1):
            text = line.split(" #", 1)[0].strip()
            if not text or text.startswith("#"):
                continue
            if _OPTION.match(text) or text.startswith((".", "/")) or "://" in text:
                raise UsageError(f"{name}:{number}: {text!r} is not a plain requirement",
                                 "list distributions by name (e.g. attrs>=23); an option or a path installs "
                                 "something else")
            reqs.append(text)
    return list(dict.fromkeys(reqs))


def _strings(value: Any, source: str, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise UsageError(f"{source}: {where} must be a list of requirement strings", "write e.g. [\"attrs>=23\"]")
    for v in value:
        if v.lstrip().startswith(("-", ".", "/")) or " @ file:" in v:
            raise UsageError(f"{source}: {where}: {v!r} is not a distribution from the index",
                             "name a distribution (a local path installs the tree)")
    return [v.strip() for v in value]
