"""Names a stand-in answers itself, never asking production: the test harness's probes and a module's own."""

from __future__ import annotations

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
