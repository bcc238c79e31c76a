"""The property runner: every property x seed on a tree, one row each; the verdict never shares a process
with the code it judges.

The folders say which side of the trust boundary a module runs on:

- ``specs``, ``trees``, ``rows``, ``schedule``, ``pool``, ``signature``: the gate (parent) side.
- ``trusted/``: the evaluator. Hypothesis, the property, its helpers and fixtures, the counter and
  the result; it never imports production code (``evaluator``, the zygote; ``forks``, a child and its
  one message; ``group``, a collector; ``session``, the pytest session; ``bounds``, the gate's settings;
  ``standins``, the import finder, over ``channel``, ``proxies``, ``link`` and ``faults``; ``report``).
- ``subject/``: production code of one tree, contained (``server`` runs inside the sandbox that
  ``sandbox`` builds, within ``cgroups``, importing the bytecode ``bytecode`` compiled).
- ``protocol/``: the narrow channel between the two (``codec``, ``wire``), standard library only.
- ``unsealed/``: the in-process runner for properties a person marked ``isolation: shared``.

This package's face imports nothing: import the module that holds a name
(``from mergegate.runner.specs import load_specs``).
"""
