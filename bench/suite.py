"""Bench: `gate check` on a real project's adopted Hypothesis suite against plain pytest doing the same work.

The project is natsort 8.4.0 (pure Python, its own Hypothesis suite; we did not write it).  Its
sdist is fetched once with ``pip download`` into ~/.cache/mergegate-bench (or
$MERGEGATE_BENCH_CACHE); nothing is installed.  A temporary repository is built the way a person
adopts the gate:

1. ``gate init``; gate.yaml's oracle paths set to ``tests/**`` (production stays ``src/**``);
2. natsort's package under ``src/natsort`` (a production commit);
3. its ``tests/`` (minus the two files that import pytest-mock, not installed here, and a profiling
   script), ``gate catalog import`` (one entry per test function: a parametrized test is one entry),
   the manifest signed (``gate manifest sign --staged``), an oracle-only commit;
4. ``gate run`` at that revision with the policy's seeds; the entries that do not pass here (natsort's
   locale tests want en_US/de_DE locales this machine lacks; a few compare production objects,
   which sealed runs refuse) are dropped in a last signed oracle-only commit: the base;
5. the head: an agent's commit adding one module-level line to ``src/natsort/natsort.py`` (a changed,
   executable line: the head's subject traces that file, the one every entry calls into);
6. a second base, the same plus ``coverage: {paths: [none/**]}`` in gate.yaml (no file traced), and
   the same head on it: the check without change coverage.

Then, side by side in one run (alternating, best of 3):

(a) ``gate check --base <base> --head <head>``, as a subprocess, wall time: everything it does
    (policy, manifest verification, worktrees, sandboxed subjects, every entry on both sides at the
    policy's seeds and its one fresh seed, change coverage, the decision and the evidence packet),
    jobs = cores (its default); (a') the same check without change coverage (the second base);
(b) plain pytest doing the same work on worktrees of the same two revisions: per side, per seed, one
    ``pytest <the Hypothesis entries' node ids> -p no:cacheprovider --hypothesis-seed=<seed>`` (the
    policy's seeds and one more, as the gate's fresh seed), and
    per side one ``pytest <the plain entries' node ids>`` (a plain test runs once per side in the gate,
    its row standing for every seed), with a settings profile of max_examples = the catalog's (no
    test of natsort sets its own), no database, no deadline, no explain phase (as the gate's
    bounds), PYTHONPATH=<tree>/src, a private PYTHONPYCACHEPREFIX and Hypothesis storage primed
    before timing (warm bytecode); the invocations run ``jobs`` at a time (a thread pool over
    subprocesses, longest first by the priming run's times: the best schedule for the baseline;
    not pytest-xdist).

Prints the counts, both times, the ratio gate/pytest against the goal (<= 1.2x), and where the
gate's time goes (from its evidence rows: per-row ``duration_s`` inside the evaluator child), with the
floor the runner's own rule sets: plain pytest's time plus one fresh production process per run
(``bench/pingpong.py``'s twin, measured here in a process of its own) shared by the cores.

With ``--plain``, the same bench on a suite of 1,000 plain tests in 50 files (``bench/catalog_import.py``'s
generated suite: three calls into a small production package each; the head's line goes into
``src/calc/ops.py``); plain pytest runs the test folder once per side.

    .venv/bin/python bench/suite.py [--plain] [--repeat=N]

``--repeat=N``: N alternating rounds (default 3), the best of each side kept: on a noisy machine more
rounds make both minima steadier (both sides get the same number of tries).
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _repo import mergegate_rev, version

from mergegate.demo import build

PLAIN = "--plain" in sys.argv[1:]  # the 1,000 plain tests instead of natsort
PROJECT, VERSION = ("calc", "1,000 plain tests") if PLAIN else ("natsort", "8.4.0")
REPEAT = next((int(a.partition("=")[2]) for a in sys.argv[1:] if a.startswith("--repeat=")), 3)  # rounds, alternating
CACHE = Path(os.environ.get("MERGEGATE_BENCH_CACHE", Path.home() / ".cache" / "mergegate-bench"))
LEFT_OUT = {  # test files not adopted, and why
    "tests/test_main.py": "imports pytest_mock (not installed)",
    "tests/test_natsort_keygen.py": "imports pytest_mock (not installed)",
    "tests/profile_natsorted.py": "a profiling script, not tests",
}
HEAD_FILE = f"src/{PROJECT}/ops.py" if PLAIN else "src/natsort/natsort.py"
GOAL = 1.2

PROFILE = """
from hypothesis import settings, Phase, HealthCheck
settings.register_profile("bench", max_examples={n}, database=None, deadline=None, derandomize=False,
                          report_multiple_bugs=False, print_blob=False,
                          phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors])
settings.load_profile("bench")
"""


# ---------------------------------------------------------------- small helpers


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def gate_cmd() -> list[str]:
    """The console script users run, from this interpreter's environment."""
    script = Path(sys.executable).parent / "gate"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "mergegate"]


def gate_env(agent: bool = False) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GATE_", "PYTHON", "HYPOTHESIS"))}
    env.update(build.AGENT if agent else build.HUMAN)
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    return env


def gate(repo_dir: Path, *args: str, ok: Sequence[int] = (0,)) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*gate_cmd(), *args], cwd=repo_dir, env=gate_env(), capture_output=True, text=True,
                          check=False)
    if proc.returncode not in ok:
        raise SystemExit(f"gate {' '.join(args)} exited {proc.returncode}:\n"
                         f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def person_commit(repo_dir: Path, message: str, sign: bool) -> str:
    """Stage everything, re-sign the manifest for an oracle-only commit, commit as a person."""
    build.git(repo_dir, "add", "-A")
    if sign:
        gate(repo_dir, "manifest", "sign", "--staged")
        build.git(repo_dir, "add", "-A")
    build.git(repo_dir, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", message)
    return build.git(repo_dir, "rev-parse", "HEAD")


# ---------------------------------------------------------------- the project and its repository


def fetch_sdist() -> Path | None:
    if PLAIN:
        return None  # generated, below
    CACHE.mkdir(parents=True, exist_ok=True)
    sdist = CACHE / f"{PROJECT}-{VERSION}.tar.gz"
    if not sdist.is_file():
        print(f"downloading {PROJECT} {VERSION}'s sdist into {CACHE} (once) ...", flush=True)
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                               "-d", str(CACHE), f"{PROJECT}=={VERSION}"], capture_output=True, text=True,
                              timeout=600, check=False)
        if proc.returncode != 0 or not sdist.is_file():
            raise SystemExit(f"cannot download {PROJECT} {VERSION} with pip (exit {proc.returncode}); put "
                             f"{sdist.name} in {CACHE} by hand or set MERGEGATE_BENCH_CACHE.\n{proc.stderr[-2000:]}")
    return sdist


def unpack(sdist: Path | None, repo_dir: Path) -> None:
    """The package under src/, the tests under tests/ (minus LEFT_OUT); ``--plain``: the generated suite."""
    if sdist is None:
        from catalog_import import OPS, test_file

        (repo_dir / "src" / PROJECT).mkdir(parents=True)
        (repo_dir / "src" / PROJECT / "__init__.py").write_text("")
        (repo_dir / HEAD_FILE).write_text(OPS)
        (repo_dir / "tests").mkdir()
        for i in range(50):
            (repo_dir / "tests" / f"test_mod{i:02d}.py").write_text(test_file(i, 20))
        return
    top = f"{PROJECT}-{VERSION}/"
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            if not member.isfile() or not member.name.startswith(top) or "__pycache__" in member.name:
                continue
            rel = member.name[len(top):]
            if rel.startswith(f"{PROJECT}/"):
                dest = repo_dir / "src" / rel
            elif rel.startswith("tests/") and rel not in LEFT_OUT:
                dest = repo_dir / rel
            else:
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            extracted = tar.extractfile(member)
            assert extracted is not None
            dest.write_bytes(extracted.read())


def catalog_entries(repo_dir: Path) -> dict[str, str]:
    """Entry id -> node id, from the catalog files in the work tree."""
    out = {}
    for path in sorted((repo_dir / "oracles" / "catalog").glob("*.yaml")):
        if path.name == "claimed.yaml":
            continue
        text = path.read_text()
        pid = re.search(r"^id: *\"?([^\"\n]+)\"?$", text, re.M)
        oracle = re.search(r"^oracle: *\"?([^\"\n]+)\"?$", text, re.M)
        assert pid and oracle, path
        out[pid.group(1)] = oracle.group(1)
    return out


def drop_entries(repo_dir: Path, drop: set[str]) -> None:
    cat = repo_dir / "oracles" / "catalog"
    for path in cat.glob("*.yaml"):
        if path.name != "claimed.yaml" and path.stem in drop:
            path.unlink()
    claimed = cat / "claimed.yaml"
    lines = [line for line in claimed.read_text().splitlines()
             if not (line.strip().startswith("- ") and line.strip()[2:].strip().strip("\"'") in drop)]
    claimed.write_text("\n".join(lines) + "\n")


def build_repo(root: Path, sdist: Path | None) -> tuple[Path, tuple[str, str, str, str], dict[str, str],
                                                       dict[str, int]]:
    """The adopted repository; base and head; the kept entries' kinds; the dropped ones by witness."""
    repo_dir = root / PROJECT
    repo_dir.mkdir(parents=True)
    build.git(repo_dir, "init", "-q", "-b", "main")
    gate(repo_dir, "init")
    policy = repo_dir / "gate.yaml"
    text = policy.read_text()
    assert 'oracle: ["oracles/properties/**"]' in text, "gate init's gate.yaml changed: update the bench"
    policy.write_text(text.replace('oracle: ["oracles/properties/**"]', 'oracle: ["tests/**"]'))
    person_commit(repo_dir, "Adopt mergegate; the oracle is tests/", sign=True)
    unpack(sdist, repo_dir)
    shutil.move(str(repo_dir / "tests"), str(root / "tests-aside"))
    person_commit(repo_dir, f"{PROJECT} {VERSION}", sign=False)
    shutil.move(str(root / "tests-aside"), str(repo_dir / "tests"))
    imported = gate(repo_dir, "catalog", "import", "--no-trial").stdout  # the bench drops what fails, below
    kinds: dict[str, str] = {}  # node id -> hypothesis | plain
    for line in imported.splitlines():
        m = re.match(r"added \S+ +(\S+) +\((hypothesis|plain test)[,)]", line)
        if m:
            kinds[m.group(1)] = "hypothesis" if m.group(2) == "hypothesis" else "plain"
    person_commit(repo_dir, f"tests: {PROJECT}'s suite, adopted as the oracle (gate catalog import)", sign=True)
    out = root / "adopt-runs.jsonl"
    # the policy's seeds; exit 2: an entry whose oracle cannot load here (its rows fail; dropped below)
    gate(repo_dir, "run", "--rev", "HEAD", "--out", str(out), ok=(0, 1, 2))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    failing = {r["prop"]: r["witness"].split(":")[0] for r in rows if r["status"] != "pass"}
    if failing:
        drop_entries(repo_dir, set(failing))
        person_commit(repo_dir, f"catalog: drop {len(failing)} entries that do not pass here", sign=True)
    base = build.git(repo_dir, "rev-parse", "HEAD")
    build.git(repo_dir, "checkout", "-q", "-b", "patch")
    head = agent_line(repo_dir)
    build.git(repo_dir, "checkout", "-q", "main")
    build.git(repo_dir, "checkout", "-q", "-b", "no-coverage", base)
    policy.write_text(policy.read_text() + 'coverage: {paths: ["none/**"]}\n')
    person_commit(repo_dir, "policy: no change coverage (the bench's control)", sign=True)
    base_off = build.git(repo_dir, "rev-parse", "HEAD")
    build.git(repo_dir, "checkout", "-q", "-b", "patch-no-coverage")
    head_off = agent_line(repo_dir)
    build.git(repo_dir, "checkout", "-q", "main")
    entries = catalog_entries(repo_dir)
    kept = {pid: kinds[node] for pid, node in entries.items()}
    return repo_dir, (base, head, base_off, head_off), kept, dict(collections.Counter(failing.values()))


def agent_line(repo_dir: Path) -> str:
    """The agent's commit on the checked-out branch: one harmless, executable module-level line."""
    target = repo_dir / HEAD_FILE
    target.write_text(target.read_text() + "\n_GATE_BENCH_CHANGE = 1\n")
    build.git(repo_dir, "add", "-A")
    build.git(repo_dir, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", f"{PROJECT}: one line",
              env=build.AGENT)
    return build.git(repo_dir, "rev-parse", "HEAD")


# ---------------------------------------------------------------- plain pytest


def plain_env(tree: Path, plugin_dir: Path, pycache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITE",
                                                                      "HYPOTHESIS", "PYTEST"))}
    env["PYTHONPATH"] = os.pathsep.join((str(tree / "src"), str(plugin_dir)))
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    env["HYPOTHESIS_STORAGE_DIRECTORY"] = f"{pycache}-hypothesis"
    return env


Invocation = tuple[Path, int | None, tuple[str, ...]]  # tree, seed (None: the plain tests), node ids


def invocations(trees: Sequence[Path], seeds: Sequence[int], hyp: Sequence[str],
                plain: Sequence[str]) -> list[Invocation]:
    runs: list[Invocation] = [(tree, seed, tuple(hyp)) for seed in seeds for tree in trees] if hyp else []
    return runs + ([(tree, None, tuple(plain)) for tree in trees] if plain else [])


def run_pytest(runs: Sequence[Invocation], plugin_dir: Path, pycache: Path, jobs: int) -> dict[Invocation, float]:
    """Each invocation a pytest process, ``jobs`` at a time; the wall time of each."""

    def one(run: Invocation) -> float:
        tree, seed, ids = run
        seed_args = [f"--hypothesis-seed={seed}"] if seed is not None else []
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                               "-p", "gate_bench_profile", *seed_args, *ids], cwd=tree,
                              env=plain_env(tree, plugin_dir, pycache), capture_output=True, text=True, check=False)
        took = time.perf_counter() - started
        if proc.returncode != 0:
            raise SystemExit(f"plain pytest failed in {tree} (seed {seed}):\n{proc.stdout[-3000:]}{proc.stderr}")
        return took

    with ThreadPoolExecutor(jobs) as ex:
        return dict(zip(runs, ex.map(one, runs), strict=True))


# ---------------------------------------------------------------- gate check


def run_check(repo_dir: Path, base: str, head: str, evidence: Path) -> subprocess.CompletedProcess[str]:
    shutil.rmtree(evidence, ignore_errors=True)
    proc = subprocess.run([*gate_cmd(), "check", "--base", base, "--head", head, "--evidence", str(evidence)],
                          cwd=repo_dir, env=gate_env(), capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"gate check exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def read_rows(evidence: Path) -> list[dict[str, Any]]:
    rows = []
    for side in ("base", "patch"):
        for line in (evidence / f"{side}.jsonl").read_text().splitlines():
            rows.append({**json.loads(line), "side": side})
    return rows


# ---------------------------------------------------------------- main


def main() -> None:
    cores = len(os.sched_getaffinity(0)) or 1
    jobs = cores  # gate check's default: one evaluator per core
    sdist = fetch_sdist()
    bench_started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gate-bench-suite-") as tmp_name:
        tmp = Path(tmp_name)
        took_setup, built = timed(lambda: build_repo(tmp, sdist))
        repo_dir, (base, head, base_off, head_off), kinds, dropped = built
        policy_text = (repo_dir / "gate.yaml").read_text()
        m = re.search(r"seeds: *\[([0-9, ]+)\]", policy_text)
        assert m, "no verdict.seeds in gate.yaml"
        seeds = tuple(int(s) for s in m.group(1).split(","))
        pytest_seeds = (*seeds, 12345)  # one more, as the gate's one fresh seed per check
        entries = catalog_entries(repo_dir)
        hyp = sorted(entries[p] for p, k in kinds.items() if k == "hypothesis")
        plain = sorted(entries[p] for p, k in kinds.items() if k == "plain")
        examples_floor = sorted({int(x) for x in re.findall(r"^max_examples: *(\d+)", "".join(
            p.read_text() for p in (repo_dir / "oracles" / "catalog").glob("*.yaml")), re.M)})
        assert len(examples_floor) == 1, f"entries differ in max_examples: {examples_floor}"
        n = examples_floor[0]

        print(f"suite bench: gate check on {PROJECT} {VERSION}'s adopted suite vs plain pytest, best of {REPEAT}, "
              f"alternating")
        print(f"machine: {cores} cores usable; Python {sys.version.split()[0]}; hypothesis {version('hypothesis')}; "
              f"pytest {version('pytest')}; mergegate {mergegate_rev()}; load average {os.getloadavg()[0]:.2f}")
        print(f"setup (not counted): {took_setup:.1f}s; test files left out: "
              + ("none" if PLAIN else "; ".join(f"{k} ({v})" for k, v in LEFT_OUT.items())))
        print(f"entries: {len(kinds)} kept ({len(hyp)} hypothesis, {len(plain)} plain); dropped "
              f"{sum(dropped.values())} that do not pass here, by witness: {dropped or 'none'}")
        print(f"seeds: {list(seeds)} (the policy's); max_examples={n} (the catalog's; no test sets its own)")

        plugin_dir = tmp / "plugin"
        plugin_dir.mkdir()
        (plugin_dir / "gate_bench_profile.py").write_text(PROFILE.format(n=n))
        pycache = tmp / "pyc-warm"
        evidence = tmp / "evidence"
        trees = [tmp / "tree-base", tmp / "tree-head"]
        for tree, rev in zip(trees, (base, head), strict=True):
            build.git(repo_dir, "worktree", "add", "-q", "--detach", str(tree), rev)
        runs = invocations(trees, pytest_seeds, hyp, ["tests"] if PLAIN else plain)  # --plain: every test
        primed = run_pytest(runs, plugin_dir, pycache, jobs)  # warm bytecode and Hypothesis storage, untimed
        runs.sort(key=lambda r: -primed[r])  # longest first: the best schedule for the baseline
        run_check(repo_dir, base, head, evidence)  # warm the gate's caches (bytecode, unicode table), untimed

        gate_times: list[float] = []
        off_times: list[float] = []
        pytest_times: list[float] = []
        per_run: dict[Invocation, list[float]] = collections.defaultdict(list)
        rows: list[dict[str, Any]] = []
        best_rows: list[dict[str, Any]] = []
        stdout = ""
        for _ in range(REPEAT):  # alternate, keep the best of each: the machine is shared
            took, proc = timed(lambda: run_check(repo_dir, base, head, evidence))
            rows = read_rows(evidence)
            bad = [r for r in rows if r["status"] != "pass"]
            if bad:
                raise SystemExit(f"gate check: {len(bad)} of {len(rows)} rows did not pass:\n"
                                 + "\n".join(json.dumps(r)[:1500] for r in bad[:5]))
            if not gate_times or took < min(gate_times):
                best_rows, stdout = rows, proc.stdout
            gate_times.append(took)
            cov = json.loads((evidence / "coverage.json").read_text())
            if not cov.get("changed") or cov.get("unreached"):
                raise SystemExit(f"gate check: the changed line was not traced and reached: {cov}")
            off_times.append(timed(lambda: run_check(repo_dir, base_off, head_off, tmp / "evidence-off"))[0])
            took, each = timed(lambda: run_pytest(runs, plugin_dir, pycache, jobs))
            pytest_times.append(took)
            for run, t in each.items():
                per_run[run].append(t)
        for tree in trees:
            build.git(repo_dir, "worktree", "remove", "--force", str(tree))

    gate_s, pytest_s = min(gate_times), min(pytest_times)
    ratio = gate_s / pytest_s
    decision = next((line for line in stdout.splitlines() if line.startswith("decision:")), "decision: ?")
    print(f"\n(a) gate check --base <base> --head <head>, jobs={jobs}: {gate_s:6.2f}s   (all runs: "
          f"{', '.join(f'{t:.2f}' for t in gate_times)}; {decision})")
    print(f"(b) plain pytest, {len(runs)} processes ({len(pytest_seeds)} seeds x 2 sides for the hypothesis entries, "
          f"1 x 2 sides for the plain ones), {jobs} at a time, warm pyc: {pytest_s:6.2f}s   (all runs: "
          f"{', '.join(f'{t:.2f}' for t in pytest_times)})")
    off_s = min(off_times)
    print(f"(a') the same check without change coverage: {off_s:6.2f}s   (all runs: "
          f"{', '.join(f'{t:.2f}' for t in off_times)}); change coverage costs {gate_s / off_s:.2f}x "
          f"(goal <= 1.10x)")
    print(f"ratio gate/pytest: {ratio:.2f}x (goal <= {GOAL}x): {'met' if ratio <= GOAL else 'MISSED'}")

    # where the gate's time goes, from its rows (the best run's)
    plain_ids = {p for p, k in kinds.items() if k == "plain"}
    real = [r for r in best_rows if r["prop"] not in plain_ids or r["seed"] == seeds[0]]  # copies of a plain row
    child = sum(r["duration_s"] for r in real)
    by_kind = {k: [r for r in real if (r["prop"] in plain_ids) == (k == "plain")] for k in ("hypothesis", "plain")}
    print(f"\nwhere the gate's {gate_s:.2f}s go ({len(real)} evaluator runs: {len(by_kind['hypothesis'])} hypothesis "
          f"entry x seed x side, {len(by_kind['plain'])} plain entry x side; {sum(r['examples'] for r in real)} "
          f"examples):")
    print(f"  inside the evaluator children (sum of row duration_s): {child:.2f}s, i.e. {child / jobs:.2f}s of wall "
          f"on {jobs} evaluators ({child / jobs / gate_s:.0%})")
    for kind, group in by_kind.items():
        if group:
            durations = [r["duration_s"] for r in group]
            print(f"    {kind:10s}: {sum(durations):6.2f}s in {len(group)} runs; per run median "
                  f"{statistics.median(durations) * 1000:.0f} ms, min {min(durations) * 1000:.0f} ms, "
                  f"max {max(durations) * 1000:.0f} ms")
    twin_us, twin_mb = fresh_process_floor()
    rule_s = pytest_s + len(real) * twin_us / 1e6 / jobs
    print(f"  the rule's own floor: a fresh production process per run (`bench/pingpong.py`'s twin: fork, one request, "
          f"exit: {twin_us / 1000:.2f} ms on one core for a {twin_mb:.0f} MB process) x {len(real)} runs over {jobs} "
          f"cores = {len(real) * twin_us / 1e6 / jobs:.2f}s more than plain pytest: with nothing else the gate would "
          f"take {rule_s:.2f}s = {rule_s / pytest_s:.2f}x")
    floor = min(r["duration_s"] for r in real)
    print(f"    a per-run floor (the fastest run, {floor * 1000:.0f} ms) x {len(real)} runs = {floor * len(real):.2f}s "
          f"of child time ({floor * len(real) / child:.0%}) that is a fixed cost, not the tests' own work")
    print(f"  outside the children (process start, policy, manifest, worktrees, subjects, fork/collect, decision, "
          f"evidence), by difference: {gate_s - child / jobs:.2f}s")
    calls = sum(int(r.get("production_calls") or 0) for r in real)
    waited = sum(float(r.get("production_s") or 0.0) for r in real)
    if calls:
        print(f"  inside the children, requests of production (sealed calls, attributes, operators): {calls} in "
              f"{waited:.2f}s ({waited / child:.0%} of child time), {waited / calls * 1e6:.0f} us each, round trip "
              "and production's own work together")
        bound = gate_s - waited / jobs
        print(f"  a lower bound for any faster call protocol (every request free, production's own work "
              f"included): {bound:.2f}s = {bound / pytest_s:.2f}x; with no per-run floor either: "
              f"{bound - floor * len(real) / jobs:.2f}s = {(bound - floor * len(real) / jobs) / pytest_s:.2f}x")
    pyt = {"hypothesis": [min(v) for r, v in per_run.items() if r[1] is not None],
           "plain": [min(v) for r, v in per_run.items() if r[1] is None]}
    hyp_each = ", ".join(f"{t:.2f}" for t in sorted(pyt["hypothesis"]))
    print(f"  plain pytest, per process (best): hypothesis {hyp_each}s; "
          f"plain {', '.join(f'{t:.2f}' for t in sorted(pyt['plain']))}s; sum {sum(map(sum, pyt.values())):.2f}s")
    print(f"bench wall time (after download): {time.perf_counter() - bench_started:.0f}s; load average at the end "
          f"{os.getloadavg()[0]:.2f} (a shared machine: a high one means noisy numbers)")


def fresh_process_floor() -> tuple[float, float]:
    """``bench/pingpong.py``'s twin (us a fork, request and exit on one core; the forking process's MB), in a
    process of its own: it pins itself to one core."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import pingpong; "
            "print(*pingpong.twin(300, sorted(pingpong.os.sched_getaffinity(0))[0]))")
    out = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent)], check=True, capture_output=True,
                         text=True).stdout.split()
    return float(out[0]), float(out[1])


if __name__ == "__main__":
    main()
