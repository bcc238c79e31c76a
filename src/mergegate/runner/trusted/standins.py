"""Stand-ins for production code inside the trusted evaluator.

An import finder, first on ``sys.meta_path``, claims every production name: the
oracle gets a stand-in module whose attributes, functions, classes and objects
forward to the subject over the call protocol.  No production file is ever
opened here, and an installed copy of the project is never reached: the finder
answers before any path is searched.

What comes back is decoded into this process's own types (``codec.decode``);
everything else is a ``Remote`` handle.  A production exception arrives as the
builtin exception of the same name, or as a ``ProductionError`` subclass named
after its type, never as one of Hypothesis's or pytest's control exceptions.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Iterable
from typing import Any

from mergegate.runner.trusted import classdefs, forks, pickles, rules
from mergegate.runner.trusted.channel import Channel
from mergegate.runner.trusted.faults import (
    ProductionError,
    ProductionImportError,
    ProductionModuleNotFound,
    SealedCallError,
    SubjectGone,
)
from mergegate.runner.trusted.proxies import Remote, RemoteModule, RemoteType, channel_of

__all__ = ["Channel", "Finder", "ProductionError", "ProductionImportError", "Remote", "RemoteModule",
           "RemoteType", "SealedCallError", "SubjectGone", "channel_of", "install"]


class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Claims the production names; each import is a request to the subject."""

    def __init__(self, names: Iterable[str], channel: Channel) -> None:
        self.names = frozenset(names)
        self.channel = channel

    def claims(self, fullname: str) -> bool:
        return fullname.partition(".")[0] in self.names

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not self.claims(fullname):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        try:
            module = self.channel.request("import", spec.name)
        except Exception as exc:
            kind = ProductionModuleNotFound if isinstance(exc, ModuleNotFoundError) else ProductionImportError
            raise kind(f"production module {spec.name} failed to import in the subject: {type(exc).__name__}: "
                       f"{exc}", name=spec.name) from None
        if type(module) is not RemoteModule:
            raise ProductionImportError(f"the subject did not answer the import of {spec.name} with a module",
                                        name=spec.name)
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        module.__path__ = []  # a package for the import system: submodules come through this finder too


def install(names: Iterable[str], socket_path: str) -> Finder:
    """Put the finder first on ``sys.meta_path``; nothing is contacted until an import needs it."""
    finder = Finder(names, Channel(socket_path))
    sys.meta_path.insert(0, finder)
    return finder


def seal(job: dict[str, Any], result: dict[str, Any]) -> Any:
    """Production behind stand-ins (the finder, first on ``sys.meta_path``); opens of the trusted tree watched."""
    names = frozenset(job["production_names"])
    for name in [n for n in sys.modules if n.partition(".")[0] in names]:
        del sys.modules[name]  # the gate's own copy of a module production owns is not the tree's
    finder = install(names, job["subject_socket"])
    rules.load(job.get("comparisons"))
    pickles.guard(finder.channel, job["trusted_root"])
    classdefs._trusted[:] = [job["trusted_root"]]
    result["opened"] = forks.watch_opens(job["trusted_root"])
    return finder
