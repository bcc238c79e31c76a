"""Bench: the differential run on 2 cores against the same two runs back to back (one core each).

Builds the demo shop and a patch on main, then times (a) ``diffrun.run_pair``
with jobs=2 (both worktrees' jobs share one pool) and (b) the base run, then the
head run, each with jobs=1, in the same worktrees.  Goal: (b)/(a) >= 1.6.

    .venv/bin/python bench/differential.py [N]
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
from pathlib import Path

from mergegate.demo import build
from mergegate.pipeline import diffrun
from mergegate.records import catalog, repo
from mergegate.runner.schedule import plan, run_tasks
from mergegate.runner.specs import load_specs
from mergegate.runner.trees import tree_info

REPEAT = 3


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    with tempfile.TemporaryDirectory() as tmp:
        shop = build.build(Path(tmp))
        base = build.git(shop, "rev-parse", "main")
        build.git(shop, "checkout", "-q", "-b", "patch")
        head = build.commit(shop, {"src/shop/orders.py": (shop / "src/shop/orders.py").read_text() + "\n# x\n"},
                            "patch", agent=True)
        policy = repo.load_policy(base, shop)
        cat, specs = load_specs(base, policy, shop)
        specs = [dataclasses.replace(s, prop=dataclasses.replace(s.prop, max_examples=n)) for s in specs]
        cat = catalog.Catalog(tuple(s.prop for s in specs), cat.claimed)
        seeds = policy.verdict.seeds
        together, apart = [], []
        for _ in range(REPEAT):  # alternate, keep the best of each: the machine is shared
            started = time.perf_counter()
            diffrun.run_pair(base, head, policy, cat, specs, seeds, jobs=2, cwd=shop)
            together.append(time.perf_counter() - started)
            started = time.perf_counter()
            with diffrun.worktrees([base, head], shop) as (base_dir, head_dir):
                for tree_dir in (base_dir, head_dir):
                    tree = tree_info(tree_dir, policy)
                    run_tasks([(tree, s, seed) for s, seed in plan(specs, seeds)], policy, jobs=1)
            apart.append(time.perf_counter() - started)
    print(f"{len(specs)} properties x {len(seeds)} seeds x 2 trees, max_examples={n}, best of {REPEAT}")
    print(f"differential, 2 cores, side by side: {min(together):.2f}s")
    print(f"two runs back to back, one core:     {min(apart):.2f}s")
    print(f"speed-up: {min(apart) / min(together):.2f}x (goal >= 1.6x)")


if __name__ == "__main__":
    main()
