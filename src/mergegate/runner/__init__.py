"""The property runner: every property x seed on a tree, one row each; the verdict never shares a process
with the code it judges.

The folders say which side of the trust boundary a module runs on:

- ``specs``, ``trees``, ``rows``, ``schedule``, ``pool``, ``signature``: the gate (parent) side.
- ``trusted/``: the evaluator. Hypothesis, the property, its helpers and fixtures, the counter and
  the result; it never imports production code (``evaluator``; ``standins``, the import finder, over
  ``channel``, ``proxies`` and ``faults``; ``report``).
- ``subject/``: production code of one tree, contained (``server`` runs inside the sandbox that
  ``sandbox`` builds, within ``cgroups``, importing the bytecode ``bytecode`` compiled).
- ``protocol/``: the narrow channel between the two (``codec``, ``wire``), standard library only.
- ``unsealed/``: the in-process runner for properties a person marked ``isolation: shared``.
"""

from mergegate.runner.pool import prestarted
from mergegate.runner.rows import SEALED, SHARED, Row, row_from_json, write_jsonl
from mergegate.runner.schedule import Progress, Task, default_jobs, for_every_seed, parse_shard, plan, run_tasks
from mergegate.runner.specs import Spec, Trusted, check_function, load_specs
from mergegate.runner.trees import Tree, files_matching, literal_prefix, production_roots, tree_digest, tree_info

__all__ = [
    "SEALED", "SHARED", "Progress", "Row", "Spec", "Task", "Tree", "Trusted", "check_function", "default_jobs",
    "files_matching", "for_every_seed", "literal_prefix", "load_specs", "parse_shard", "plan", "prestarted",
    "production_roots", "row_from_json",
    "run_tasks", "tree_digest", "tree_info", "write_jsonl",
]
