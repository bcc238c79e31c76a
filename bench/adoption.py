"""Adoption study (issues 10 and 21): real open-source Hypothesis suites through the gate, as they are.

For each project in ``PROJECTS`` (bidict, pyrsistent, hpack, priority, natsort) this script, from the local
mirror of its history:

1. clones it at the adoption commit, runs ``gate init``, points ``gate.yaml`` at the package (production)
   and the tests (oracle), and commits that as a person with the manifest signed;
2. runs ``gate catalog import`` (timed; a ``--dry-run`` over the whole oracle tree first, for the raw
   figures): it tries each entry on the work tree and writes it sealed, shared, or leaves it out with why
   (counted); the project's hand edits (``pin``, ``--shared-all``), if any; commits;
3. runs ``gate run --rev HEAD`` (timed) and counts entries that pass on the adopted revision; agreement with
   plain pytest per entry (``bench/agreement.py``), for the catalog as written and, in a scratch clone, for
   every test import found written sealed (``--no-trial``): the fraction that runs sealed and agrees;
4. speed: an agent's one-line change to ``head_file``, ``gate check`` against plain pytest doing the same work
   (the entries' node ids on both revisions, each Hypothesis entry once per seed, the plain ones once);
5. replays the upstream first-parent commits that change the package: per commit, the tree as of that commit
   in the work tree, ``gate catalog import`` there (its trial sees the upstream code that came with the tests),
   then the test part (tests and catalog) as a person's oracle-only commit, then the package part as an
   agent's commit (author ``replay[bot]@...``), judged by ``gate check --base <oracle commit> --head <package
   commit>``;
6. reintroduces real past bugs: reverts the package part of each fix commit (an agent's commit) and asks
   ``gate check`` whether it rejects it: on the adopted revision (``adopt``), at the end of the replay
   (``end``), or in the replay right after the fix's own commit (``replay``: its test is in the oracle).

It needs the mirrors (``fetch github:<owner>/<name>`` puts them under /work/.mirror) and the gate's
virtualenv's Python (this checkout's ``src/`` is put first on ``PYTHONPATH``, so the gate under study is this
checkout's, not what the virtualenv's editable install points at).  Not run in CI.

    .venv/bin/python bench/adoption.py [--work /work/adopt/study] [--only NAME ...] [--skip-replay]
        [--skip-bugs] [--skip-speed] [--skip-agreement] [--max-replay N] [--replay-from N] [--shared-all]

It prints the figures and writes ``<work>/results.json`` (``<work>/results-NAME.json`` with one ``--only``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import agreement

ROOT = Path(__file__).resolve().parents[1]
GATE = [sys.executable, "-m", "mergegate"]  # with ROOT/src first on PYTHONPATH (``run``): this checkout's gate
GATE_PATH = str(ROOT / "src")
PERSON = {
    "GIT_AUTHOR_NAME": "Ada Maintainer",
    "GIT_AUTHOR_EMAIL": "ada@maintainers.example",
    "GIT_COMMITTER_NAME": "Ada Maintainer",
    "GIT_COMMITTER_EMAIL": "ada@maintainers.example",
}
AGENT = {
    "GIT_AUTHOR_NAME": "replay",
    "GIT_AUTHOR_EMAIL": "replay[bot]@agents.example",
    "GIT_COMMITTER_NAME": "replay",
    "GIT_COMMITTER_EMAIL": "replay[bot]@agents.example",
}

PROJECTS: dict[str, dict[str, Any]] = {
    "bidict": {
        "mirror": "/work/.mirror/jab+bidict/repo",
        "fetch": "github:jab/bidict",
        "adopt": "154908382c1c5e4b91f49419feab048a6ae743d0",  # 2025-06-20, bidict 0.23.x
        "end": "77ade420ab2274b11e75d68fd45ec789b6ca0bc6",  # 2026-08-17
        "package": "bidict",
        "tests": "tests",
        "pythonpath": "",  # the package's import root (plain pytest's PYTHONPATH)
        "head_file": "bidict/_exc.py",  # the speed check's agent patch adds one line here
        "import_paths": None,  # gate catalog import takes the files pytest collects (not microbenchmarks.py)
        "extra_entries": [],  # import finds the state machine (BidictStateMachineTest = ....TestCase)
        # tests/bidict_test_fixtures.py subclasses production classes at import: that runs sealed now (the class
        # statement is executed in the subject), so no entry is marked shared
        "shared_files": [],
        # (label, fix commit: its first-parent diff restricted to the package is reverted, on which revision)
        "bugs": [
            ("NaN keys: _dedup no-op detection (#382)", "eced6241c6210002c5938a181e1dffe28e05de4c", "end"),
            (
                "OrderedBidict keys() vs items() comparison TypeError (#376, #384)",
                "a92284506f43b12d870cbebb23bfce9d1f607170",
                "end",
            ),
            (
                "bulk update rollback for non-dup failures (#389, #391)",
                "c9d4f851522adfb714d2b07dcd89b8596bb8153b",
                "end",
            ),
            (
                "roll back failed bulk updates when on_dup cannot raise (#392)",
                "b0f3b9aaa9792dcf7a630b22a5e1b86762895e8c",
                "end",
            ),
        ],
    },
    "pyrsistent": {
        "mirror": "/work/.mirror/tobgu+pyrsistent/repo",
        "fetch": "github:tobgu/pyrsistent",
        "adopt": "d859d629661a1cc7864d1669e2d44f0d12de9390",  # 2021-10-03, pyrsistent 0.18.0
        "end": "401eeff4f60c1f864ad626a8bf0ef8e643fb69c9",  # 2025-10-22
        "package": "pyrsistent",
        "tests": "tests",
        "pythonpath": "",
        "head_file": "pyrsistent/_pmap.py",
        "import_paths": None,  # every *_test.py
        "extra_entries": [],  # import finds both state machines (PVectorBuilderTests = ....TestCase)
        "shared_files": [],
        # tests taking the `pvector` fixture run once per implementation; the C one (pvectorc) is not built, and a
        # node id with one skipped instance is a fail for the gate: pin the pure-Python instance
        "pin": {"file": "tests/vector_test.py", "fixture": "pvector", "param": "pyrsistent._pvector"},
        "bugs": [
            ("KeyError obscured by TypeError for a tuple key", "885796fb", "adopt"),
            ("#154 transform on an empty pmap leaf", "30f13814", "adopt"),
            ("#171 comparison with an object without len()", "57dd2dd2", "adopt"),
            ("#121 PClass.set() regression", "6ac0eef4", "adopt"),
            ("negative indexing of pdeques", "327d10da", "adopt"),
            ("#263 pmap regression when buckets are reallocated", "226ebb67", "end"),
            ("#268 pmap size with bad equality", "0be88dd2", "end"),
            ("#268 pmap relies on __ne__", "3fa47c2e", "end"),
            ("#245 discard introduces new nodes", "07d60a5e", "end"),
        ],
    },
    "hpack": {
        "mirror": "/work/.mirror/python-hyper+hpack/repo",
        "fetch": "github:python-hyper/hpack",
        "adopt": "f8ee36b66bb622fc317a692339006d7b18490a35",  # 2024-11-22 "modernize everything": test/ -> tests/
        "end": "d05cff4cd462658847f67c48700aab40b2ba8cf1",  # 2026-06-21, v4.2.0
        "package": "src/hpack",
        "tests": "tests",
        "pythonpath": "src",
        "head_file": "src/hpack/hpack.py",
        "import_paths": None,
        "extra_entries": [],
        "shared_files": [],
        "bugs": [
            ("encoding with generators (99e5658)", "99e56587ddd9ac4f1d8eb5539759e262d456f013", "adopt"),
            ("perfect match missed for headers with empty values", "89cce964fded888d720289dcce881d4e1f35be80",
             "replay"),
            # its test came two commits later (44193d8): judged again at the end of the replay
            ("perfect match missed for headers with empty values (at the end)",
             "89cce964fded888d720289dcce881d4e1f35be80", "end"),
            ("sensitive header value logged", "273971bd864fd2016e043ef62a34f076f65a9d16", "replay"),
            ("variable integer decoding not bounded to uint32 (run-away computation)",
             "8cfb02c547740e16dbfe7aba77bad84b297cec2c", "replay"),
        ],
    },
    "priority": {
        "mirror": "/work/.mirror/python-hyper+priority/repo",
        "fetch": "github:python-hyper/priority",
        "adopt": "7d01a7dc4db83bce50f20d47caf4f37b403a3ecd",  # 2016-08-04, merge #23 (issue #22)
        "end": "352fe577ef53505bbaef6c013da51f3578de154d",  # 2021-06-27, v2.0.0
        "package": "src/priority",
        "tests": "test",
        "pythonpath": "src",
        "head_file": "src/priority/priority.py",
        "import_paths": None,
        "extra_entries": [],
        "shared_files": [],
        "bugs": [
            ("#22 (the adoption commit's own fix)", "7d01a7dc4db83bce50f20d47caf4f37b403a3ecd", "adopt"),
            ("#35/#36 idle streams (bugfix)", "057affdb646d38732b48cfa7c18fa93e8cf04e28", "replay"),
            ("#38/#39 (bugfix)", "c2bc33c1d122c604ca7eb0a8cda1bb19a4731188", "replay"),
            ("#51 stream 0 may not be reprioritised, removed, blocked", "923c43c1d1238a4f08ff34a874688e455b8751e6",
             "replay"),
            ("#54 a stream that depends on itself: PriorityLoop", "67b908e9535323b30e36ac936edfe51cbc7499e2",
             "replay"),
        ],
    },
    "natsort": {
        "mirror": "/work/.mirror/SethMMorton+natsort/repo",
        "fetch": "github:SethMMorton/natsort",
        "adopt": "d9503c08f8f83ce8a89bfcc45fec136868756243",  # 2023-06-19, 8.4.0 (bench/suite.py's sdist)
        "end": "1941a45bf85c558eef53685b00b9375041fc006d",  # 2025-08-01
        "package": "natsort",
        "tests": "tests",
        "pythonpath": "",
        "head_file": "natsort/natsort.py",
        "import_paths": None,
        "extra_entries": [],
        "shared_files": [],
        "bugs": [
            ("NANLAST/NANFIRST ordering (8.3.0)", "0e7533d2799c4bc8cc6968cd6485b6996eee0a05", "adopt"),
            ("#166 os_sorted on Windows (8.4.0)", "9d2eba869602fdb1a569be6e29ae3a063969c824", "adopt"),
            ("#171 unicode numerals missing from Python 3.12", "f06d35fe2c06b0008223c6599e44b6eae08a2e24", "replay"),
        ],
    },
}


# ---------------------------------------------------------------- plumbing


def run(
    cmd: list[str], cwd: Path, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    full.pop("GATE_AGENT", None)
    full["PYTHONPATH"] = os.pathsep.join(filter(None, [GATE_PATH, os.environ.get("PYTHONPATH")]))
    proc = subprocess.run(cmd, cwd=cwd, env=full, text=True, capture_output=True)
    if check and proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def git(repo: Path, *args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
    return run(["git", *args], repo, env=env, check=check).stdout.strip()


def gate(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run([*GATE, *args], repo, check=check)


def commit(repo: Path, message: str, who: dict[str, str]) -> str | None:
    if not git(repo, "diff", "--cached", "--name-only"):
        return None
    git(repo, "commit", "-q", "--no-verify", "-m", message, env=who)
    return git(repo, "rev-parse", "HEAD")


def take_tree(repo: Path, rev: str, path: str) -> None:
    """Make ``path`` exactly what it is at ``rev`` (deletions included) and stage it."""
    git(repo, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", path)
    shutil.rmtree(repo / path, ignore_errors=True)
    if git(repo, "ls-tree", "--name-only", rev, "--", path):
        git(repo, "checkout", rev, "--", path)
    git(repo, "add", "-A", "--", path)


# ---------------------------------------------------------------- the catalog, as a maintainer keeps it


def claimed_ids(repo: Path) -> list[str]:
    text = (repo / "oracles/catalog/claimed.yaml").read_text()
    return re.findall(r'^\s*-\s*"?([^"\n]+?)"?\s*$', text, re.M)


def write_claimed(repo: Path, ids: list[str]) -> None:
    body = "".join(f'  - "{i}"\n' for i in ids)
    (repo / "oracles/catalog/claimed.yaml").write_text(
        "# Property ids this repository claims; promotion needs every one of them.\nclaimed:"
        + ("\n" + body if ids else " []\n")
    )


def entry_text(pid: str, oracle: str, claim: str, package: str) -> str:
    return (
        f'id: {pid}\noracle: "{oracle}"\nclaim: "{claim}"\ncanary: false\nquarantine_eligible: false\n'
        f'fixtures: []\nmax_examples: 100\ncovers: ["{package}/**"]\n'
    )


def sync_catalog(repo: Path, cfg: dict[str, Any]) -> dict[str, Any]:
    """Delete entries naming no test, import new tests, apply the project's hand edits. Returns what changed."""
    out: dict[str, Any] = {"gone": [], "added": [], "import_s": 0.0}
    status = gate(repo, "catalog", "status", check=False).stdout
    for line in status.splitlines():
        m = re.match(r"gone\s+(oracles/catalog/[^:]+\.yaml)", line)
        if m:
            pid = Path(m.group(1)).stem
            (repo / m.group(1)).unlink()
            out["gone"].append(pid)
    if out["gone"]:
        write_claimed(repo, [i for i in claimed_ids(repo) if i not in out["gone"]])
    paths = [p for p in (cfg["import_paths"] or []) if (repo / p).exists()]
    if cfg["import_paths"] is None or paths:
        t0 = time.perf_counter()
        imp = gate(repo, "catalog", "import", *(["--no-trial"] if cfg.get("no_trial") else []), *paths, check=False)
        out["import_s"] = time.perf_counter() - t0
        if imp.returncode not in (0, 1):
            raise SystemExit(f"gate catalog import exited {imp.returncode}:\n{imp.stdout[-3000:]}\n"
                             f"{imp.stderr[-3000:]}")
        out["added"] = re.findall(r"^added \S+/([^/\s]+)\.yaml\s", imp.stdout, re.M)
        out["import_stdout"] = imp.stdout
        out["import_counts"] = import_counts(imp.stdout)
    for pid, oracle, claim in cfg["extra_entries"]:
        f = repo / f"oracles/catalog/{pid}.yaml"
        cls_file, _, name = oracle.partition("::")
        present = (repo / cls_file).exists() and re.search(
            rf"^{re.escape(name)}\s*=", (repo / cls_file).read_text(), re.M
        )
        if present and not f.exists():
            f.write_text(entry_text(pid, oracle, claim, cfg["package"]))
            write_claimed(repo, [*claimed_ids(repo), pid])
            out["added"].append(pid)
        elif not present and f.exists():
            f.unlink()
            write_claimed(repo, [i for i in claimed_ids(repo) if i != pid])
    excluded = EXCLUDED.get(cfg["package"], set())
    again = [
        p for p in out["added"] if (repo / f"oracles/catalog/{p}.yaml").exists() and oracle_of(repo, p) in excluded
    ]
    if again:
        drop(repo, again)
        out["added"] = [p for p in out["added"] if p not in again]
        out["excluded_again"] = len(again)
    pin = cfg.get("pin")
    if pin and (repo / pin["file"]).exists():
        src = (repo / pin["file"]).read_text()
        for f in sorted((repo / "oracles/catalog").glob("*.yaml")):
            text = f.read_text()
            m = re.search(rf'oracle: "{re.escape(pin["file"])}::(\w+)"', text)
            if m and re.search(rf"def {m.group(1)}\([^)]*\b{pin['fixture']}\b", src):
                f.write_text(text.replace(m.group(0), m.group(0)[:-1] + f'[{pin["param"]}]"'))
    for f in sorted((repo / "oracles/catalog").glob("*.yaml")):
        text = f.read_text()
        if (
            f.name != "claimed.yaml"
            and "isolation:" not in text
            and (cfg.get("shared_all") or any(f'"{s}::' in text for s in cfg["shared_files"]))
        ):
            why = ("--shared-all: every entry shared" if cfg.get("shared_all") else
                   "its oracle subclasses production classes (docs/runner.md: not supported sealed)")
            f.write_text(text.rstrip("\n") + f"\nisolation: shared   # {why}\n")
    git(repo, "add", "-A", "--", "oracles/catalog")
    return out


def import_counts(stdout: str) -> dict[str, Any]:
    """What ``gate catalog import`` wrote: sealed, shared (with the sealed run's reason), left out (both reasons)."""
    how = re.findall(r"^added \S+\s+(\S+)\s+\((plain test|hypothesis|state machine)[^,]*, (sealed|shared|untried)",
                     stdout, re.M)
    shared = re.findall(r"^added \S+\s+(\S+)\s+\([^,]+, shared: fails sealed \((.*)\)\)$", stdout, re.M)
    left = re.findall(r"^left out\s+(\S+)\s+\(([^)]+)\): fails sealed \((.*)\) and in-process \((.*)\)$",
                      stdout, re.M)
    return {
        "sealed": sum(1 for _, _, h in how if h == "sealed"),
        "shared": sum(1 for _, _, h in how if h == "shared"),
        "untried": sum(1 for _, _, h in how if h == "untried"),
        "left_out": len(left),
        "by_kind": dict(Counter(f"{h} {k}" for _, k, h in how)),
        "shared_why": {n: w for n, w in shared},
        "left_out_why": {n: {"kind": k, "sealed": a, "in_process": b} for n, k, a, b in left},
    }


EXCLUDED: dict[str, set[str]] = {}  # per project: node ids a maintainer dropped (import would add them again)


def oracle_of(repo: Path, pid: str) -> str:
    m = re.search(r'oracle: "([^"]+)"', (repo / f"oracles/catalog/{pid}.yaml").read_text())
    return m.group(1).split("[")[0] if m else ""  # parameter pins are the maintainer's, not import's


def drop(repo: Path, pids: list[str]) -> None:
    for pid in pids:
        (repo / f"oracles/catalog/{pid}.yaml").unlink(missing_ok=True)
    write_claimed(repo, [i for i in claimed_ids(repo) if i not in pids])
    git(repo, "add", "-A", "--", "oracles/catalog")


def sign_and_commit(repo: Path, message: str) -> str | None:
    gate(repo, "manifest", "sign", "--staged")
    return commit(repo, message, PERSON)


def kinds(repo: Path) -> Counter[str]:
    """Kinds of the catalog's entries as the runner plans them (from a dry run of import over an empty catalog)."""
    c: Counter[str] = Counter()
    for f in (repo / "oracles/catalog").glob("*.yaml"):
        if f.name == "claimed.yaml":
            continue
        text = f.read_text()
        shared = "isolation: shared" in text
        oracle = re.search(r'oracle: "([^"]+)"', text).group(1)  # type: ignore[union-attr]
        c[("shared " if shared else "sealed ") + kind_of(repo, oracle)] += 1
    return c


def kind_of(repo: Path, oracle: str) -> str:
    file_, _, rest = oracle.partition("::")
    src = (repo / file_).read_text()
    name = rest.split("::")[-1]
    if re.search(rf"^{re.escape(name)}\s*=\s*\w+\.TestCase", src, re.M):
        return "state machine"
    m = re.search(rf"^(\s*(?:@.*\n\s*)*)def {re.escape(name)}\(", src, re.M)
    return "hypothesis" if m and "@given" in m.group(1) else "plain"


# ---------------------------------------------------------------- runs


def rows_by_prop(path: Path) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        out.setdefault(row["prop"], []).append(row)
    return out


def gate_run(repo: Path, out: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    proc = gate(repo, "run", "--rev", "HEAD", "--out", str(out), check=False)
    secs = time.perf_counter() - t0
    props = rows_by_prop(out) if out.exists() else {}
    passing = sorted(p for p, rs in props.items() if all(r["status"] == "pass" for r in rs))
    failing = {
        p: {
            "witness": rs[0]["witness"],
            "isolation": rs[0].get("isolation"),
            "error": (rs[0].get("error") or "")[-400:],
        }
        for p, rs in props.items()
        if any(r["status"] != "pass" for r in rs)
    }
    return {
        "seconds": round(secs, 1),
        "exit": proc.returncode,
        "entries": len(props),
        "pass": len(passing),
        "failing": failing,
        "stderr": proc.stderr[-1500:],
    }


def gate_run_tree(repo: Path, tree: Path, trusted: str, out: Path) -> dict[str, Any]:
    gate(repo, "run", "--tree", str(tree), "--trusted", trusted, "--out", str(out), check=False)
    props = rows_by_prop(out) if out.exists() else {}
    return {
        "failing": {
            p: {"witness": rs[0]["witness"]} for p, rs in props.items() if any(r["status"] != "pass" for r in rs)
        }
    }


def gate_check(repo: Path, base: str, head: str, evidence: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    proc = gate(repo, "check", "--base", base, "--head", head, "--evidence", str(evidence), "--json", check=False)
    secs = time.perf_counter() - t0
    out: dict[str, Any] = {"exit": proc.returncode, "seconds": round(secs, 1)}
    dec_file = evidence / "decision.json"
    if dec_file.exists():
        dec = json.loads(dec_file.read_text())
        out["decision"] = dec.get("decision")
        out["reasons"] = dec.get("reasons") or dec.get("reason")
        props = dec.get("properties") or dec.get("verdicts") or []
        if isinstance(props, dict):
            props = [{"prop": k, **v} for k, v in props.items()]
        out["not_pass"] = [
            {
                k: p.get(k)
                for k in ("prop", "id", "verdict", "reason", "base", "head", "witness")
                if p.get(k) is not None
            }
            for p in props
            if isinstance(p, dict) and p.get("verdict") != "pass"
        ]
        out["counts"] = dict(Counter(p.get("verdict") for p in props if isinstance(p, dict)))
    else:
        out["stdout"] = proc.stdout[-1500:]
        out["stderr"] = proc.stderr[-1500:]
    return out


# ---------------------------------------------------------------- the study


def adopt(name: str, cfg: dict[str, Any], work: Path) -> dict[str, Any]:
    repo = work / name
    shutil.rmtree(repo, ignore_errors=True)
    run(["git", "clone", "-q", cfg["mirror"], str(repo)], work)
    git(repo, "checkout", "-q", "-b", "adopt", cfg["adopt"])
    for k, v in PERSON.items():
        if k.startswith("GIT_COMMITTER"):
            git(repo, "config", "user." + ("name" if k.endswith("NAME") else "email"), v)
    res: dict[str, Any] = {
        "adopt": cfg["adopt"],
        "end": cfg["end"],
        "describe": git(repo, "log", "-1", "--format=%h %ad %s", "--date=short"),
    }
    gate(repo, "init")
    pol = (repo / "gate.yaml").read_text()
    pol = pol.replace('production: ["src/**"]', f'production: ["{cfg["package"]}/**"]')
    pol = pol.replace('oracle: ["oracles/properties/**"]', f'oracle: ["{cfg["tests"]}/**"]')
    (repo / "gate.yaml").write_text(pol)
    git(repo, "add", "-A")
    res["init_commit"] = sign_and_commit(
        repo, f"Adopt mergegate: {cfg['package']}/ is production, {cfg['tests']}/ the oracle"
    )
    # the raw figures: what import would write for the whole oracle tree
    t0 = time.perf_counter()
    dry = gate(repo, "catalog", "import", "--dry-run").stdout
    res["import_dry_s"] = round(time.perf_counter() - t0, 2)
    raw = re.findall(r"^would add \S+\s+(\S+)\s+\((plain test|hypothesis)\)", dry, re.M)
    res["import_raw"] = {
        "entries": len(raw),
        "by_kind": dict(Counter(k for _, k in raw)),
        "files": dict(Counter(n.partition("::")[0] for n, _ in raw)),
    }
    synced = sync_catalog(repo, cfg)
    res["import_s"] = round(synced["import_s"], 2)
    res["import"] = synced.get("import_counts")
    (work / f"{name}.import.txt").write_text(synced.get("import_stdout", ""))
    res["catalog_commit"] = sign_and_commit(repo, "catalog: adopt the suite (gate catalog import + hand edits)")
    res["catalog_kinds"] = dict(kinds(repo))
    res["catalog_status"] = gate(repo, "catalog", "status", check=False).stdout.strip().splitlines()[-2:]
    res["run"] = gate_run(repo, work / f"{name}.adopt.jsonl")
    if not cfg.get("skip_agreement"):
        res["agreement_as_imported"] = agreement.agreement(repo, work / f"{name}.adopt.jsonl", cfg["tests"],
                                                           cfg["pythonpath"])
        res["agreement_all_sealed"] = agreement_all_sealed(name, cfg, work)
    # a maintainer drops the entries the gate cannot run on the adopted revision (they would fail every check)
    res["dropped"] = sorted(res["run"]["failing"])
    EXCLUDED[cfg["package"]] = {oracle_of(repo, p) for p in res["dropped"]}
    drop(repo, res["dropped"])
    res["drop_commit"] = sign_and_commit(repo, f"catalog: drop {len(res['dropped'])} entries the gate cannot run")
    res["catalog_kinds_kept"] = dict(kinds(repo))
    res["run_kept"] = gate_run(repo, work / f"{name}.adopted.jsonl")
    git(repo, "branch", "-f", "adopted", "HEAD")
    return res


def agreement_all_sealed(name: str, cfg: dict[str, Any], work: Path) -> dict[str, Any]:
    """Every test import finds, written sealed and untried (``--no-trial``), run sealed, against plain pytest."""
    repo = work / f"{name}-sealed"
    shutil.rmtree(repo, ignore_errors=True)
    run(["git", "clone", "-q", "-b", "adopt", str(work / name), str(repo)], work)
    git(repo, "reset", "-q", "--hard", "HEAD~1")  # the init commit, before the catalog
    for k, v in PERSON.items():
        if k.startswith("GIT_COMMITTER"):
            git(repo, "config", "user." + ("name" if k.endswith("NAME") else "email"), v)
    sync_catalog(repo, {**cfg, "no_trial": True, "shared_all": False})
    sign_and_commit(repo, "catalog: every test, sealed, untried")
    rows = work / f"{name}.sealed.jsonl"
    ran = gate_run(repo, rows)
    out = agreement.agreement(repo, rows, cfg["tests"], cfg["pythonpath"])
    out["gate_run_s"] = ran["seconds"]
    return out


PROFILE = """
from hypothesis import settings, Phase, HealthCheck
settings.register_profile("bench", max_examples={n}, database=None, deadline=None, derandomize=False,
                          report_multiple_bugs=False, print_blob=False,
                          phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
                          suppress_health_check=list(HealthCheck))
settings.load_profile("bench")
"""


def speed(name: str, cfg: dict[str, Any], work: Path, repeat: int = 2) -> dict[str, Any]:
    """``gate check`` of an agent's one-line change against plain pytest doing the same work (as bench/suite.py):
    per side, each Hypothesis entry's node ids once per seed (the policy's and one more, the gate's fresh seed),
    the plain ones once; ``jobs`` = cores processes at a time; warm bytecode; best of ``repeat``, alternating."""
    from concurrent.futures import ThreadPoolExecutor

    repo = work / name
    git(repo, "checkout", "-q", "-B", "speed", "adopted")
    base = git(repo, "rev-parse", "HEAD")
    target = repo / cfg["head_file"]
    target.write_text(target.read_text() + "\n_GATE_BENCH_CHANGE = 1\n")
    git(repo, "add", "-A")
    head = commit(repo, "one harmless line", AGENT)
    assert head
    seeds = [int(x) for x in re.search(r"seeds: *\[([0-9, ]+)\]", (repo / "gate.yaml").read_text())
             .group(1).split(",")]  # type: ignore[union-attr]
    hyp, plain = [], []
    for f in sorted((repo / "oracles/catalog").glob("*.yaml")):
        if f.name == "claimed.yaml":
            continue
        oracle = re.search(r'oracle: "([^"]+)"', f.read_text()).group(1)  # type: ignore[union-attr]
        (plain if kind_of(repo, oracle) == "plain" else hyp).append(oracle)
    trees = [work / f"{name}-speed-base", work / f"{name}-speed-head"]
    for tree, rev in zip(trees, (base, head), strict=True):
        run(["git", "worktree", "remove", "--force", str(tree)], repo, check=False)
        git(repo, "worktree", "add", "-q", "--detach", str(tree), rev)
    plugin = work / f"{name}-speed-plugin"
    plugin.mkdir(exist_ok=True)
    (plugin / "gate_bench_profile.py").write_text(PROFILE.format(n=100))
    jobs = len(os.sched_getaffinity(0)) or 1
    runs = [(t, sd, hyp) for sd in [*seeds, 12345] for t in trees if hyp] + [(t, None, plain) for t in trees if plain]

    def one(r: tuple[Path, int | None, list[str]]) -> float:
        tree, seed, ids = r
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "HYPOTHESIS", "PYTEST"))}
        env["PYTHONPATH"] = os.pathsep.join([str(tree / cfg["pythonpath"]), str(plugin)])
        env["PYTHONPYCACHEPREFIX"] = str(work / f"{name}-speed-pyc")
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                        "-p", "gate_bench_profile", *([f"--hypothesis-seed={seed}"] if seed is not None else []),
                        *ids], cwd=tree, env=env, capture_output=True, text=True, check=False)
        return time.perf_counter() - t0

    def pytest_all() -> float:
        t0 = time.perf_counter()
        with ThreadPoolExecutor(jobs) as ex:
            list(ex.map(one, runs))
        return time.perf_counter() - t0

    def check() -> float:
        shutil.rmtree(work / "evidence" / name / "speed", ignore_errors=True)
        t0 = time.perf_counter()
        res = gate_check(repo, base, head, work / "evidence" / name / "speed")
        if res.get("exit") not in (0, 1):
            raise SystemExit(f"speed: gate check exited {res.get('exit')}: {res}")
        return time.perf_counter() - t0

    pytest_all()
    check()  # warm both, untimed
    gate_s, pytest_s, loads = [], [], []
    for _ in range(repeat):
        loads.append(os.getloadavg()[0])
        gate_s.append(round(check(), 2))
        pytest_s.append(round(pytest_all(), 2))
    loads.append(os.getloadavg()[0])
    for tree in trees:
        run(["git", "worktree", "remove", "--force", str(tree)], repo, check=False)
    decision = gate_check(repo, base, head, work / "evidence" / name / "speed").get("decision")
    return {"gate_s": gate_s, "pytest_s": pytest_s, "ratio": round(min(gate_s) / min(pytest_s), 2),
            "hypothesis_entries": len(hyp), "plain_entries": len(plain), "pytest_processes": len(runs),
            "jobs": jobs, "loadavg": [round(x, 2) for x in loads], "decision": decision}


def replay(name: str, cfg: dict[str, Any], work: Path, limit: int | None = None,
           start: int = 1) -> list[dict[str, Any]]:
    """Each upstream commit as the maintainer's oracle commit then the agent's package commit, judged; the
    commits before ``start`` are taken as they are, unjudged (both parts a person's: a run resumed there)."""
    repo = work / name
    git(repo, "checkout", "-q", "-B", "replay", "adopted")
    commits = git(
        repo, "rev-list", "--first-parent", "--reverse", f"{cfg['adopt']}..{cfg['end']}", "--", cfg["package"]
    ).split()[:limit]
    out = []
    for i, c in enumerate(commits, 1):
        subject = git(repo, "log", "-1", "--format=%s", c)
        row: dict[str, Any] = {"n": i, "commit": c[:8], "subject": subject}
        # the maintainer's checkout of the upstream commit: tests and package as of it; import tries the new
        # entries there (on the code that came with them), then only the tests and the catalog are committed
        take_tree(repo, c, cfg["tests"])
        take_tree(repo, c, cfg["package"])
        synced = sync_catalog(repo, cfg)
        if i < start:  # taken, not judged
            git(repo, "reset", "-q", "HEAD", "--", cfg["package"])
            sign_and_commit(repo, f"tests as of {c[:8]} (oracle part of: {subject})")
            git(repo, "add", "-A", "--", cfg["package"])
            commit(repo, f"{subject} (package part of {c[:8]}, not judged)", PERSON)
            continue
        git(repo, "reset", "-q", "HEAD", "--", cfg["package"])  # unstaged: the agent's part
        row["oracle_commit"] = sign_and_commit(repo, f"tests as of {c[:8]} (oracle part of: {subject})")
        row["catalog_added"], row["catalog_gone"] = synced["added"], synced["gone"]
        row["import"] = {k: v for k, v in (synced.get("import_counts") or {}).items() if v}
        base = git(repo, "rev-parse", "HEAD")
        git(repo, "add", "-A", "--", cfg["package"])
        head = commit(repo, f"{subject} (package part of {c[:8]})", AGENT)
        if head is None:
            row["verdict"] = "no package change"
            out.append(row)
            continue
        row.update(gate_check(repo, base, head, work / "evidence" / name / f"replay-{i:02d}-{c[:8]}"))
        print(
            f"  {name} replay {i:2d} {c[:8]} {row.get('decision')} {row.get('reasons')} "
            f"{[p.get('prop') or p.get('id') for p in row.get('not_pass', [])][:6]}  {subject[:60]}",
            flush=True,
        )
        out.append(row)
        for label, fix, on in cfg["bugs"]:
            if on == "replay" and fix.startswith(c[:8]):
                bug = judge_revert(repo, label, fix, head, cfg, work)
                bug["on"] = f"replay {i}"
                cfg.setdefault("replay_bugs", []).append(bug)
                git(repo, "checkout", "-q", "replay")
    git(repo, "branch", "-f", "replayed", "HEAD")
    return out


def judge_revert(repo: Path, label: str, fix: str, base: str, cfg: dict[str, Any], work: Path) -> dict[str, Any]:
    """An agent's commit on ``base`` reverting the package part of ``fix``, judged by ``gate check``."""
    git(repo, "checkout", "-q", "-B", f"bug-{fix[:8]}", base)
    diff = run(["git", "diff", f"{fix}^1", fix, "--", cfg["package"]], repo).stdout
    row: dict[str, Any] = {"bug": label, "fix": fix[:8]}
    proc = subprocess.run(
        ["git", "apply", "-R", "--3way", "--index"], cwd=repo, input=diff, text=True, capture_output=True
    )
    if proc.returncode != 0 or git(repo, "diff", "--name-only", "--diff-filter=U"):
        row["verdict"] = "revert does not apply"
        row["detail"] = proc.stderr[-500:]
        git(repo, "reset", "-q", "--hard", base)
        return row
    head = commit(repo, f"reintroduce the bug fixed by {fix[:8]}", AGENT)
    row.update(gate_check(repo, git(repo, "rev-parse", base), head or base, work / "evidence" / repo.name /
                          f"bug-{fix[:8]}"))
    row["caught"] = row.get("decision") == "reject"
    failing = [(p.get("prop") or p.get("id"), p.get("reason")) for p in row.get("not_pass", [])][:6]
    print(f"  {repo.name} bug {fix[:8]} {row.get('decision')} {failing}  {label}", flush=True)
    return row


def bugs(name: str, cfg: dict[str, Any], work: Path) -> list[dict[str, Any]]:
    repo = work / name
    out = list(cfg.get("replay_bugs", []))
    for label, fix, on in cfg["bugs"]:
        if on == "replay":
            if not any(b["fix"] == fix[:8] for b in out):
                out.append({"bug": label, "fix": fix[:8], "on": on, "verdict": "not judged (replay did not reach it)"})
            continue
        row = judge_revert(repo, label, fix, git(repo, "rev-parse", "adopted" if on == "adopt" else "replayed"), cfg,
                           work)
        row["on"] = on
        out.append(row)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default="/work/adopt/study")
    ap.add_argument("--only", action="append")
    ap.add_argument("--skip-replay", action="store_true")
    ap.add_argument("--skip-bugs", action="store_true")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--skip-agreement", action="store_true")
    ap.add_argument("--speed-only", action="store_true",
                    help="only the speed figure, on the repository an earlier run adopted (branch adopted in --work)")
    ap.add_argument("--max-replay", type=int, default=None, help="replay only the first N upstream commits")
    ap.add_argument("--replay-from", type=int, default=1,
                    help="judge the upstream commits from the Nth on (the ones before are taken unjudged)")
    ap.add_argument("--shared-all", action="store_true",
                    help="mark every imported entry isolation: shared (the maintainer's choice for suites that "
                         "compare production objects)")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    which = run([sys.executable, "-c", "import mergegate; print(mergegate.__file__)"], work).stdout.strip()
    print(f"gate under study: {which} (python {sys.version.split()[0]}); load average {os.getloadavg()}", flush=True)
    results_file = work / (f"results-{args.only[0]}.json" if args.only and len(args.only) == 1 else "results.json")
    results: dict[str, Any] = {"_gate": which}
    for name, cfg in PROJECTS.items():
        if args.only and name not in args.only:
            continue
        if not Path(cfg["mirror"]).is_dir():
            print(f"{name}: no mirror at {cfg['mirror']}; fetch it first ({cfg['fetch']})", file=sys.stderr)
            return 2
        print(f"== {name}" + (" (every entry shared)" if args.shared_all else ""), flush=True)
        cfg = {**cfg, "shared_all": args.shared_all, "skip_agreement": args.skip_agreement}
        if args.speed_only:
            fig = speed(name, cfg, work)
            print(f"  speed: {fig}", flush=True)
            (work / f"speed-{name}.json").write_text(json.dumps(fig, indent=1))
            continue
        started = time.perf_counter()
        res = adopt(name, cfg, work)
        run_ = res["run"]
        imp = res["import"] or {}
        print(
            f"  adopted {res['describe']}: import (dry run, whole tree) {res['import_raw']}; "
            f"import {res['import_s']} s: "
            f"{imp.get('sealed')} sealed, {imp.get('shared')} shared, {imp.get('left_out')} left out; "
            f"gate run {run_['seconds']} s: {run_['pass']}/{run_['entries']} entries pass",
            flush=True,
        )
        for key in ("agreement_as_imported", "agreement_all_sealed"):
            a = res.get(key)
            if a:
                print(f"  {key}: {a['entries']} entries, plain {a['plain_pass']}, gate {a['sealed_pass']}, "
                      f"agree {a['agree']} ({100 * a['agree'] / max(a['entries'], 1):.1f}%)", flush=True)
                for d in a["differ"]:
                    print(f"    {d['prop']}: plain {d['plain']} {d['plain_cases']}, gate {d['sealed']}: "
                          f"{d['error'][:200]!r}", flush=True)
        witnesses = Counter(f["witness"].split(":")[0] for f in run_["failing"].values())
        print(f"    failing on the adopted revision, by witness class: {dict(witnesses)}")
        print(
            f"  dropped {len(res['dropped'])}; kept {res['catalog_kinds_kept']}; "
            f"gate run {res['run_kept']['seconds']} s: "
            f"{res['run_kept']['pass']}/{res['run_kept']['entries']} pass",
            flush=True,
        )
        results[name] = res
        results_file.write_text(json.dumps(results, indent=1))
        if not args.skip_speed:
            res["speed"] = speed(name, cfg, work)
            print(f"  speed: {res['speed']}", flush=True)
        if not args.skip_replay:
            res["replay"] = replay(name, cfg, work, args.max_replay, args.replay_from)
            results_file.write_text(json.dumps(results, indent=1))
            c = Counter(r.get("decision") or r.get("verdict") for r in res["replay"])
            print(f"  replay: {len(res['replay'])} commits: {dict(c)}", flush=True)
        if not args.skip_bugs:
            if args.skip_replay:
                cfg["bugs"] = [b for b in cfg["bugs"] if b[2] == "adopt"]
            res["bugs"] = bugs(name, cfg, work)
            print(f"  bugs: {sum(1 for b in res['bugs'] if b.get('caught'))}/{len(res['bugs'])} caught", flush=True)
        res["wall_s"] = round(time.perf_counter() - started)
        results[name] = res
        results_file.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
