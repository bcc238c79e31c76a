"""Bench: the property runner against plain pytest, same properties and examples, one core.

Builds the demo shop, then runs its three properties at seeds 11, 29, 47 with
max_examples=N: once through ``mergegate.runner`` (one fresh forked process per
property x seed, jobs=1) and once through ``pytest --hypothesis-seed`` (one pytest
process per seed, PYTHONPATH=src, a profile with the same settings).  Goal: <= 1.3x.

    .venv/bin/python bench/runner.py [N]
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mergegate.demo import build
from mergegate.records import repo
from mergegate.runner.schedule import plan, run_tasks
from mergegate.runner.specs import load_specs
from mergegate.runner.trees import tree_info

SEEDS = (11, 29, 47)
REPEAT = 3
CONFTEST = """
from hypothesis import settings, Phase, HealthCheck
settings.register_profile("bench", max_examples={n}, database=None, deadline=None, derandomize=False,
                          phases=(Phase.explicit, Phase.generate, Phase.target, Phase.shrink),
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("bench")
"""

# The floor: every property at every seed in ONE process, no pytest, no isolation at all.
BARE = """
import importlib.util, sys
from pathlib import Path
from hypothesis import HealthCheck, Phase, seed, settings
settings.register_profile("bench", max_examples={n}, database=None, deadline=None,
                          phases=(Phase.explicit, Phase.generate, Phase.target, Phase.shrink),
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("bench")
tests = []
for f in sorted(Path("oracles/properties").glob("test_*.py")):
    spec = importlib.util.spec_from_file_location(f.stem, f)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    tests += [v for k, v in vars(mod).items() if k.startswith("test_")]
for s in {seeds}:
    for t in tests:
        seed(s)(t)()
"""


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    with tempfile.TemporaryDirectory() as tmp:
        shop = build.build(Path(tmp))
        head = build.git(shop, "rev-parse", "HEAD")
        policy = repo.load_policy(head, shop)
        _cat, specs = load_specs(head, policy, shop)
        specs = [dataclasses.replace(s, prop=dataclasses.replace(s.prop, max_examples=n)) for s in specs]
        tree = tree_info(shop, policy)
        tasks = [(tree, spec, seed) for spec, seed in plan(specs, SEEDS)]
        env = {**os.environ, "PYTHONPATH": str(shop / "src")}
        ours_t, plain_t, bare_t = [], [], []
        for _ in range(REPEAT):  # alternate, keep the best of each: the machine is shared
            started = time.perf_counter()
            rows = run_tasks(tasks, policy, jobs=1)
            ours_t.append(time.perf_counter() - started)
            assert all(r.status == "pass" for r in rows), [r.to_json() for r in rows if r.status != "pass"]
            (shop / "conftest.py").write_text(CONFTEST.format(n=n))
            started = time.perf_counter()
            for seed in SEEDS:
                subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                                f"--hypothesis-seed={seed}", "oracles/properties"], cwd=shop, env=env,
                               check=True, capture_output=True)
            plain_t.append(time.perf_counter() - started)
            (shop / "conftest.py").unlink()
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", BARE.format(n=n, seeds=SEEDS)], cwd=shop, env=env, check=True)
            bare_t.append(time.perf_counter() - started)
        ours, plain, bare = min(ours_t), min(plain_t), min(bare_t)
    print(f"properties x seeds: {len(tasks)}, max_examples={n}, one core, best of {REPEAT}")
    print(f"runner (fresh process per property x seed): {ours:.2f}s")
    print(f"plain pytest (one process per seed):         {plain:.2f}s")
    print(f"bare Hypothesis (one process, every seed):  {bare:.2f}s")
    print(f"ratio runner/pytest: {ours / plain:.2f}x (goal <= 1.3x); runner/bare: {ours / bare:.2f}x")


if __name__ == "__main__":
    main()
