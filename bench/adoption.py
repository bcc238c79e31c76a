"""Adoption study (issue 10): real open-source Hypothesis suites through the gate, as they are.

For each project (bidict, pyrsistent) this script, from the local mirror of its history:

1. clones it at the adoption commit, runs ``gate init``, points ``gate.yaml`` at the package (production)
   and the tests (oracle), and commits that as a person with the manifest signed;
2. runs ``gate catalog import`` (timed; a ``--dry-run`` over the whole oracle tree first, for the raw
   figures), applies the hand edits a maintainer had to make (listed per project in ``FIXUPS``), commits;
3. runs ``gate run --rev HEAD`` (timed) and counts entries that pass on the adopted revision;
4. replays the upstream first-parent commits that change the package: per commit, the test part first
   (tests/ as of that commit, catalog synced: entries of removed tests deleted, new tests imported, the
   same hand edits) as a person's oracle-only commit, then the package part as an agent's commit
   (author ``replay[bot]@...``), judged by ``gate check --base <oracle commit> --head <package commit>``;
5. reintroduces real past bugs: reverts the package part of each fix commit on top of an adopted revision
   (an agent's commit) and asks ``gate check`` whether it rejects it.

It needs the mirrors (``fetch github:jab/bidict`` and ``fetch github:tobgu/pyrsistent`` put them under
/work/.mirror) and the gate's virtualenv. It takes about 15-25 minutes on two cores and is not run in CI.

    .venv/bin/python bench/adoption.py [--work /work/adopt/study] [--only bidict] [--skip-replay] [--skip-bugs]
        [--shared-all]

It prints the figures and writes ``<work>/results.json``.
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

ROOT = Path(__file__).resolve().parents[1]
GATE = str(ROOT / ".venv" / "bin" / "gate")
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
}


# ---------------------------------------------------------------- plumbing


def run(
    cmd: list[str], cwd: Path, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    full.pop("GATE_AGENT", None)
    proc = subprocess.run(cmd, cwd=cwd, env=full, text=True, capture_output=True)
    if check and proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def git(repo: Path, *args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
    return run(["git", *args], repo, env=env, check=check).stdout.strip()


def gate(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run([GATE, *args], repo, check=check)


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
        imp = gate(repo, "catalog", "import", *paths)
        out["import_s"] = time.perf_counter() - t0
        out["added"] = re.findall(r"^added \S+/([^/\s]+)\.yaml\s", imp.stdout, re.M)
        out["import_stdout"] = imp.stdout
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
    res["catalog_commit"] = sign_and_commit(repo, "catalog: adopt the suite (gate catalog import + hand edits)")
    res["catalog_kinds"] = dict(kinds(repo))
    res["catalog_status"] = gate(repo, "catalog", "status", check=False).stdout.strip().splitlines()[-2:]
    res["run"] = gate_run(repo, work / f"{name}.adopt.jsonl")
    # a maintainer drops the entries the gate cannot run on the adopted revision (they would fail every check)
    res["dropped"] = sorted(res["run"]["failing"])
    EXCLUDED[cfg["package"]] = {oracle_of(repo, p) for p in res["dropped"]}
    drop(repo, res["dropped"])
    res["drop_commit"] = sign_and_commit(repo, f"catalog: drop {len(res['dropped'])} entries the gate cannot run")
    res["catalog_kinds_kept"] = dict(kinds(repo))
    res["run_kept"] = gate_run(repo, work / f"{name}.adopted.jsonl")
    git(repo, "branch", "-f", "adopted", "HEAD")
    return res


def replay(name: str, cfg: dict[str, Any], work: Path) -> list[dict[str, Any]]:
    repo = work / name
    git(repo, "checkout", "-q", "-B", "replay", "adopted")
    commits = git(
        repo, "rev-list", "--first-parent", "--reverse", f"{cfg['adopt']}..{cfg['end']}", "--", cfg["package"]
    ).split()
    out = []
    for i, c in enumerate(commits, 1):
        subject = git(repo, "log", "-1", "--format=%s", c)
        row: dict[str, Any] = {"n": i, "commit": c[:8], "subject": subject}
        take_tree(repo, c, cfg["tests"])
        synced = sync_catalog(repo, cfg)
        row["oracle_commit"] = sign_and_commit(repo, f"tests as of {c[:8]} (oracle part of: {subject})")
        row["catalog_added"], row["catalog_gone"] = synced["added"], synced["gone"]
        if synced["added"] and row["oracle_commit"]:
            # the maintainer runs the new entries on upstream's own tree (tests and fix together) and keeps
            # only those the gate can run there
            wt = work / f"{name}-upstream"
            run(["git", "worktree", "remove", "--force", str(wt)], repo, check=False)
            git(repo, "worktree", "add", "-q", "--detach", str(wt), c)
            probe = gate_run_tree(repo, wt, row["oracle_commit"], work / f"{name}.probe-{i:02d}.jsonl")
            git(repo, "worktree", "remove", "--force", str(wt))
            bad = [p for p in synced["added"] if p in probe["failing"]]
            row["catalog_added_dropped"] = {p: probe["failing"][p]["witness"] for p in bad}
            if bad:
                drop(repo, bad)
                git(repo, "reset", "-q", "--soft", "HEAD^")
                row["oracle_commit"] = sign_and_commit(repo, f"tests as of {c[:8]} (oracle part of: {subject})")
        base = git(repo, "rev-parse", "HEAD")
        take_tree(repo, c, cfg["package"])
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
    git(repo, "branch", "-f", "replayed", "HEAD")
    return out


def bugs(name: str, cfg: dict[str, Any], work: Path) -> list[dict[str, Any]]:
    repo = work / name
    out = []
    for label, fix, on in cfg["bugs"]:
        base = "adopted" if on == "adopt" else "replayed"
        git(repo, "checkout", "-q", "-B", f"bug-{fix}", base)
        diff = run(["git", "diff", f"{fix}^1", fix, "--", cfg["package"]], repo).stdout
        fix = fix[:8]
        row: dict[str, Any] = {"bug": label, "fix": fix, "on": on}
        proc = subprocess.run(
            ["git", "apply", "-R", "--3way", "--index"], cwd=repo, input=diff, text=True, capture_output=True
        )
        if proc.returncode != 0 or git(repo, "diff", "--name-only", "--diff-filter=U"):
            row["verdict"] = "revert does not apply"
            row["detail"] = proc.stderr[-500:]
            git(repo, "reset", "-q", "--hard", base)
            out.append(row)
            continue
        head = commit(repo, f"reintroduce the bug fixed by {fix}", AGENT)
        row.update(
            gate_check(repo, git(repo, "rev-parse", base), head or base, work / "evidence" / name / f"bug-{fix}")
        )
        row["caught"] = row.get("decision") == "reject"
        failing = [p.get("prop") or p.get("id") for p in row.get("not_pass", [])][:6]
        print(f"  {name} bug {fix} {row.get('decision')} {failing}  {label}", flush=True)
        out.append(row)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default="/work/adopt/study")
    ap.add_argument("--only", action="append")
    ap.add_argument("--skip-replay", action="store_true")
    ap.add_argument("--skip-bugs", action="store_true")
    ap.add_argument("--shared-all", action="store_true",
                    help="mark every imported entry isolation: shared (the maintainer's choice for suites that "
                         "compare production objects)")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    for name, cfg in PROJECTS.items():
        if args.only and name not in args.only:
            continue
        if not Path(cfg["mirror"]).is_dir():
            print(f"{name}: no mirror at {cfg['mirror']}; fetch it first ({cfg['fetch']})", file=sys.stderr)
            return 2
        print(f"== {name}" + (" (every entry shared)" if args.shared_all else ""), flush=True)
        cfg = {**cfg, "shared_all": args.shared_all}
        res = adopt(name, cfg, work)
        run_ = res["run"]
        print(
            f"  adopted {res['describe']}: import (dry run, whole tree) {res['import_raw']}; "
            f"catalog {res['catalog_kinds']}; import {res['import_s']} s; gate run {run_['seconds']} s: "
            f"{run_['pass']}/{run_['entries']} entries pass",
            flush=True,
        )
        witnesses = Counter(f["witness"].split(":")[0] for f in run_["failing"].values())
        print(f"    failing on the adopted revision, by witness class: {dict(witnesses)}")
        print(
            f"  dropped {len(res['dropped'])}; kept {res['catalog_kinds_kept']}; "
            f"gate run {res['run_kept']['seconds']} s: "
            f"{res['run_kept']['pass']}/{res['run_kept']['entries']} pass",
            flush=True,
        )
        if not args.skip_replay:
            res["replay"] = replay(name, cfg, work)
            results[name] = res
            (work / "results.json").write_text(json.dumps(results, indent=1))
            c = Counter(r.get("decision") or r.get("verdict") for r in res["replay"])
            print(f"  replay: {len(res['replay'])} commits: {dict(c)}", flush=True)
        if not args.skip_bugs:
            res["bugs"] = bugs(name, cfg, work)
            print(f"  bugs: {sum(1 for b in res['bugs'] if b.get('caught'))}/{len(res['bugs'])} caught", flush=True)
        results[name] = res
        (work / "results.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
