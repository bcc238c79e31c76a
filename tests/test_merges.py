"""Merge bases from one ``rev-list --parents``: exact, whatever dates the commits carry."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from mergegate.git import merges
from tests.helpers import clean_env, git


def _random_dag(repo: Path, seed: int, n: int = 60, skew: bool = False) -> list[str]:
    """``n`` commits with random one or two parents; ``skew``: dates jump back and forth."""
    rng = random.Random(seed)
    out = []
    for i in range(1, n + 1):
        when = 1_700_000_000 + (rng.randint(-10**6, 10**6) if skew else i * 60)
        msg = f"c{i}".encode()
        out.append(b"commit refs/heads/c%d\nmark :%d\ncommitter A <a@x> %d +0000\ndata %d\n%s\n"
                   % (i, i, when, len(msg), msg))
        if i > 1:
            parents = rng.sample(range(1, i), min(i - 1, rng.choice((1, 1, 2))))
            out.append(b"from :%d\n" % parents[0])
            out += [b"merge :%d\n" % p for p in parents[1:]]
        out.append(b"M 100644 inline f%d\ndata 2\n%d\n\n" % (i % 7, i % 10))
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=b"".join(out), check=True,
                   env=clean_env())
    return [git(repo, "rev-parse", f"c{i}").stdout.strip() for i in range(1, n + 1)]


def _truth(a: str, b: str, graph: merges.Graph) -> set[str]:
    """Brute force: common ancestors none of which is an ancestor of another common one."""
    def ancestors(c: str) -> set[str]:
        seen, stack = {c}, [c]
        while stack:
            for p in graph.get(stack.pop(), ()):
                if p not in seen:
                    seen.add(p)
                    stack.append(p)
        return seen

    common = ancestors(a) & ancestors(b)
    return {c for c in common if not any(c != d and c in ancestors(d) for d in common)}


@pytest.mark.parametrize("skew", [False, True])
def test_merge_bases_are_the_best_common_ancestors(tmp_path: Path, skew: bool) -> None:
    repo = tmp_path / "r.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    shas = _random_dag(repo, seed=3 + skew, skew=skew)
    graph = merges.ancestry(shas, repo)
    gen = merges.generations(graph)
    rng = random.Random(5)
    several = 0
    for _ in range(150):
        a, b = rng.choice(shas), rng.choice(shas)
        got = merges.merge_bases(a, b, graph, gen)
        assert len(got) == len(set(got))
        assert set(got) == _truth(a, b, graph)
        several += len(got) > 1
        if not skew:
            want = git(repo, "merge-base", "--all", a, b).stdout.split()
            assert set(got) == set(want)
    assert several  # criss-cross cases were among them


def test_pair_diffs_keep_pairs_apart_even_when_empty(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    c = _random_dag(repo, seed=1, n=8)
    got = merges.pair_diffs([(c[1], c[1]), (c[2], c[1]), (c[1], c[1])], None, repo)
    want = set(git(repo, "diff-tree", "-r", "--name-only", "--no-renames", c[1], c[2]).stdout.split())
    assert got == [set(), want, set()] and want
