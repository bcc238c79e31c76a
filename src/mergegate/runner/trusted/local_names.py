"""Names a stand-in answers itself, never asking production: the test harness's probes, a module's own, typing's
subscripts."""

from __future__ import annotations

import types
from typing import Any

# What the test harness (pytest, unittest, Hypothesis) asks of every object in a test module to
# decide what is a test, a fixture, a mark or a skip.  Answered here, never by production: a
# production object is never a test, a fixture or a mark of the trusted session (and the probes
# cost no round trips).
HARNESS = frozenset({
    "__test__", "pytestmark", "_pytestfixturefunction", "_fixture_function_marker", "_fixture_function",
    "__pytest_wrapped__", "hypothesis", "is_hypothesis_test", "hypothesis_explicit_examples",
    "_hypothesis_internal_use_settings", "_hypothesis_internal_use_seed", "_hypothesis_internal_use_reproduce_failure",
    "_hypothesis_internal_use_generated_seed", "_hypothesis_state_machine_class", "__unittest_skip__",
    "__unittest_skip_why__", "__unittest_expecting_failure__",
})


# The import system's own attributes of a module: local, never asked of production.
# ``__file__`` too: the evaluator never opens a path production chooses (Hypothesis reads the source
# of "local" modules for constants; a stand-in has no source here).
MODULE_LOCAL = frozenset({"__path__", "__spec__", "__loader__", "__package__", "__name__", "__cached__",
                          "__builtins__", "__getattr__", "__dir__", "__class__", "__dict__", "__file__"})


def typing_key(key: Any, stand_in: type) -> bool:
    """``Base[KT, VT]`` in an annotation or alias: a subscript of type variables, typing's forms or real classes
    (``stand_in``, the metaclass of production classes' stand-ins, excepted): typing's, answered here."""
    import typing

    keys = key if type(key) is tuple else (key,)
    return bool(keys) and all(isinstance(k, (typing.TypeVar, typing.ParamSpec, types.GenericAlias))
                              or type(k).__module__ == "typing"
                              or (issubclass(type(k), type) and type(k) is not stand_in) for k in keys)
