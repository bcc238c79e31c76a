"""The public API surface of production code, read with ``ast`` (nothing is imported or run).

Public means: a top-level function or class whose name does not start with an
underscore, filtered by ``__all__`` when the module declares one as a literal.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mergegate.errors import UsageError
from mergegate.records.policy import PRODUCTION, Policy

SOURCE_MAX = 4000
IMPORT_ROOTS = ("src/", "")  # the container puts /repo/src then /repo on sys.path


@dataclass(frozen=True)
class Api:
    """One public function or class."""

    module: str
    qualname: str
    kind: str  # "function" | "class"
    signature: str
    doc: str
    path: str
    lineno: int
    source: str

    @property
    def target(self) -> str:
        return f"{self.module}.{self.qualname}"


def module_name(path: str) -> str | None:
    """``src/pkg/mod.py`` -> ``pkg.mod``; None when it is not importable by that name."""
    if not path.endswith(".py"):
        return None
    for root in IMPORT_ROOTS:
        if path.startswith(root):
            parts = path[len(root):-3].split("/")
            break
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)


def _declared_all(tree: ast.Module) -> set[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
                return set(value)
    return None


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> str:
    if isinstance(node, ast.ClassDef):
        bases = ", ".join(ast.unparse(b) for b in node.bases)
        return f"class {node.name}({bases})" if bases else f"class {node.name}"
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    return f"{prefix} {node.name}({ast.unparse(node.args)}){returns}"


def parse_module(path: str, text: str) -> list[Api]:
    """The public API of one file; a file that does not parse has none."""
    module = module_name(path)
    if module is None:
        return []
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    exported = _declared_all(tree)
    apis = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if node.name.startswith("_") or (exported is not None and node.name not in exported):
            continue
        source = ast.get_source_segment(text, node) or ""
        apis.append(Api(
            module=module, qualname=node.name,
            kind="class" if isinstance(node, ast.ClassDef) else "function",
            signature=_signature(node), doc=ast.get_docstring(node) or "",
            path=path, lineno=node.lineno, source=source[:SOURCE_MAX],
        ))
    return apis


def surface(files: Mapping[str, bytes], policy: Policy) -> list[Api]:
    """Every public API in the production files of ``{path: bytes}``."""
    apis: list[Api] = []
    for path in sorted(files):
        if policy.classify(path) == PRODUCTION and path.endswith(".py"):
            apis.extend(parse_module(path, files[path].decode("utf-8", errors="replace")))
    return apis


def surface_at(rev: str, policy: Policy, cwd: str | Path | None = None) -> list[Api]:
    """The public API of the production code at ``rev``, from git blobs."""
    from mergegate.git import blobs as git_blobs

    entries = [e for e in git_blobs.ls_tree(rev, cwd)
               if e.path.endswith(".py") and not e.is_symlink and not e.is_submodule
               and policy.classify(e.path) == PRODUCTION]
    blobs = dict(git_blobs.read_blobs((e.sha for e in entries), cwd))
    return surface({e.path: blobs[e.sha] for e in entries}, policy)


def _matches(api: Api, target: str) -> bool:
    directory = target.rstrip("/") + "/"
    return target in (api.module, api.target, api.path) or api.path.startswith(directory) \
        or api.module.startswith(target + ".")


def select(apis: Sequence[Api], targets: Iterable[str], limit: int) -> list[Api]:
    """The APIs the targets name (all when none), at most ``limit``; an unknown target is an error."""
    targets = list(targets)
    chosen = list(apis)
    if targets:
        for target in targets:
            if not any(_matches(a, target) for a in apis):
                raise UsageError(f"--target {target}: no public function or class of the production code matches",
                                 "name a module (pkg.mod), a function (pkg.mod.func) or a path under production")
        chosen = [a for a in apis if any(_matches(a, t) for t in targets)]
    return chosen[:limit]
