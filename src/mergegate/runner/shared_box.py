"""Where a shared run's process lives: a sandbox of its own per tree, apart from every trusted process.

A property marked ``isolation: shared`` runs production in the property's own process
(``unsealed/worker.py``), behind in-process guards: whatever they check, that process is
production's. Forked from the trusted evaluator's zygote, as the gate's user, it could write what
later sealed runs read (the trusted oracle tree, their shared bytecode), the gate's own code and
the repository's configuration, read the gate's environment (a CI token), and signal or write to
the processes that report every other row: "a shared entry may only reject" would rest on nothing.

So shared runs get zygotes of their own, per tree under test (as many as the trusted pool has), each
started like that tree's subject, inside bubblewrap (``subject/sandbox.py``: own user, PID, network,
IPC and mount namespaces, uid 65534, no capabilities), seeing the interpreter, the gate's code,
the trusted oracle trees and the tree read-only, writing only a folder of their own, with a clean
environment; a zygote's outcomes are accepted for its own jobs only, and one that stops reading or
answering is killed (``Pool.deadline``).
The base's shared runs and the head's never share a sandbox: a head cannot forge the base's rows.
What a shared run can still forge is its own row: a fail counts (it rejects the patch that forged
it), a pass is no evidence (``rules/sealed_evidence.py``). Without bubblewrap (``containment:
none``) the zygotes are still separate processes, and the rows say ``none``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mergegate.runner import pool as poollib
from mergegate.runner.subject import sandbox
from mergegate.runner.trees import Tree

COLLECT_S = 120.0  # on top of a job's own timeout: the sandbox's start and the oracle file's collection


def folder(scratch: Path, label: str) -> Path:
    """The one folder a tree's shared runs may write (their logs, bytecode and Hypothesis home)."""
    return scratch / f"shared-{label}"


def make_pool(tree: Tree, label: str, scratch: Path, reads: Sequence[Path], containment: str,
              timeout: float, size: int) -> poollib.Pool:
    """A pool of up to ``size`` zygotes (each a sandbox) for ``tree``'s shared runs (``containment``: bwrap or none).

    As many as the trusted pool has: ``gate catalog import`` tries every entry shared too."""
    own = folder(scratch, label)
    for sub in ("pycache", "home"):
        (own / sub).mkdir(parents=True, exist_ok=True)
    env = {"HYPOTHESIS_NO_PLUGINS": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    if containment != sandbox.BUBBLEWRAP:
        return poollib.Pool(size, timeout, own, command=poollib.worker_cmd(), env={**poollib.child_env(), **env},
                            deadline=timeout + COLLECT_S)
    argv = sandbox.contained(sandbox.SubjectSpec(str(tree.root), tree.prod_roots), poollib.worker_cmd(),
                             [*poollib.site_dirs(), *(str(p) for p in reads)], writable=[str(own)], env=env)
    return poollib.Pool(size, timeout, own, command=argv, env={}, deadline=timeout + COLLECT_S)
