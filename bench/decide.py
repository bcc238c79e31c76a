"""Bench: ``differential.decide`` against seed 003's reference scorer, same rows, side by side.

Both read the same parent/patch rows (P properties x 3 seeds, a mix of every table row) and
must reach the same decision; the script prints each one's best-of-5 time and the ratio
(ours / seed's).  Ours validates and groups rows once, so it should stay within ~1.5x of the
seed's dictionary lookups while being invariant under row order.

    .venv/bin/python bench/decide.py [P]
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

from mergegate.rules import differential

SEEDS = [11, 29, 47]


# ---- seed 003's reference scorer, verbatim (the baseline)
def split(statuses: Iterable[str]) -> bool:
    seen = set(statuses)
    return "pass" in seen and "fail" in seen


def seed_decide(parent: list[dict[str, Any]], patch: list[dict[str, Any]], seeds: list[int]) -> dict[str, Any]:
    if not parent or not patch:
        return {"decision": "reject", "reason": "incomplete_contract", "results": []}

    def index(rows: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
        return {(r["prop"], int(r["seed"])): r for r in rows}

    pmap, cmap = index(parent), index(patch)
    props = sorted({r["prop"] for r in parent} | {r["prop"] for r in patch})
    results = []

    for prop in props:
        p_rows = [pmap.get((prop, s)) for s in seeds]
        c_rows = [cmap.get((prop, s)) for s in seeds]
        if any(r is None for r in p_rows + c_rows):
            results.append({"prop": prop, "decision": "reject", "reason": "missing_seed"})
            continue

        def side_status(rows: list[Any]) -> str:
            return "fail" if any(r["status"] == "fail" for r in rows) else "pass"

        def witnesses(rows: list[Any]) -> list[str]:
            return sorted({r.get("witness", "") for r in rows if r["status"] == "fail"})

        p_status, c_status = side_status(p_rows), side_status(c_rows)
        p_wit, c_wit = witnesses(p_rows), witnesses(c_rows)

        if p_status == "pass" and c_status == "pass":
            item = {"prop": prop, "decision": "accept", "reason": "both_pass"}
        elif p_status == "pass" and c_status == "fail":
            item = {"prop": prop, "decision": "reject", "reason": "regression"}
        elif p_status == "fail" and c_status == "pass":
            item = {"prop": prop, "decision": "accept", "reason": "parent_fail_cleared"}
        elif p_wit != c_wit:
            item = {"prop": prop, "decision": "reject", "reason": "witness_mismatch"}
        elif not (split(r["status"] for r in p_rows) or split(r["status"] for r in c_rows)):
            item = {"prop": prop, "decision": "reject", "reason": "uniform_fail"}
        else:
            item = {"prop": prop, "decision": "propose_freeze", "reason": "shared_variant_fail"}
        results.append(item)

    if any(r["decision"] == "reject" for r in results):
        return {"decision": "reject", "results": results}
    if any(r["decision"] == "propose_freeze" for r in results):
        return {"decision": "propose_freeze", "results": results}
    return {"decision": "accept", "results": results}


def make_rows(n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rnd = random.Random(20260920)
    parent, patch = [], []
    for i in range(n):
        for seed in SEEDS:
            for side in (parent, patch):
                status = "fail" if rnd.random() < 0.2 else "pass"
                side.append({"prop": f"prop.p{i:05d}", "seed": seed, "status": status,
                             "witness": rnd.choice(["AssertionError:a", "KeyError:b"]) if status == "fail" else ""})
    return parent, patch


def best(fn: Callable[[], object], rounds: int = 5) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    parent, patch = make_rows(n)
    p_rows = [differential.Row(r["prop"], r["seed"], r["status"], r["witness"]) for r in parent]
    c_rows = [differential.Row(r["prop"], r["seed"], r["status"], r["witness"]) for r in patch]
    ours = differential.decide(p_rows, c_rows, SEEDS).to_dict()
    theirs = seed_decide(parent, patch, SEEDS)
    assert ours == theirs, "decide disagrees with seed 003's reference scorer"
    t_seed = best(lambda: seed_decide(parent, patch, SEEDS))
    t_ours = best(lambda: differential.decide(p_rows, c_rows, SEEDS))
    print(f"decide over {n} properties x {len(SEEDS)} seeds ({2 * len(parent)} rows), best of 5")
    print(f"seed 003 reference: {t_seed * 1000:.1f} ms")
    print(f"mergegate decide:   {t_ours * 1000:.1f} ms")
    print(f"ratio (ours / seed): {t_ours / t_seed:.2f}x")


if __name__ == "__main__":
    main()
