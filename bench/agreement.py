"""Per catalog entry: does the sealed gate agree with plain pytest on the same revision? (issue 21's figure)

    .venv/bin/python bench/agreement.py REPO [--rows ROWS.jsonl] [--tests tests]

REPO is a repository adopted with ``gate init`` + ``gate catalog import`` (bench/adoption.py leaves them
under /work/adopt/study/<project>).  Without ``--rows`` it runs ``gate run --rev HEAD`` (every entry at the
policy's seeds); then plain pytest over the oracle folder (``--junitxml``, the repository's own ini
ignored).  An entry passes plain pytest when every test case its node id names passed; it passes sealed when
every row of it passed.  Prints entries, both pass counts, the agreeing fraction and each disagreement.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def gate_cmd() -> tuple[list[str], dict[str, str]]:
    """This checkout's gate (its ``src/`` first on the path, whatever the virtualenv's editable install points at)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    return [sys.executable, "-m", "mergegate"], env


def plain_cases(repo: Path, tests: str, pythonpath: str = "") -> dict[str, str]:
    """Node id -> pass | fail | skip, from one plain pytest run (``pythonpath``: the package's import root, relative
    to ``repo``, e.g. ``src``; empty: the repository's top)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "HYPOTHESIS", "PYTEST"))}
    env["PYTHONPATH"] = str(repo / pythonpath)
    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "junit.xml"
        subprocess.run([sys.executable, "-m", "pytest", tests, "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                        "--continue-on-collection-errors", f"--junitxml={xml}"],
                       cwd=repo, capture_output=True, text=True, check=False, env=env)
        root = ET.parse(xml).getroot()
    out: dict[str, str] = {}
    for case in root.iter("testcase"):
        parts = str(case.get("classname")).split(".")
        for cut in range(len(parts), 0, -1):
            if (repo / ("/".join(parts[:cut]) + ".py")).exists():
                break
        nodeid = "::".join(["/".join(parts[:cut]) + ".py", *parts[cut:], str(case.get("name"))])
        tags = {child.tag for child in case}
        out[nodeid] = "fail" if tags & {"failure", "error"} else "skip" if "skipped" in tags else "pass"
    return out


def entries(repo: Path) -> dict[str, str]:
    out = {}
    for path in sorted((repo / "oracles/catalog").glob("*.yaml")):
        m = re.search(r'^oracle: "?([^"\n]+?)"?\s*$', path.read_text(), re.M)
        if path.name != "claimed.yaml" and m:
            out[path.stem] = m.group(1)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path)
    ap.add_argument("--rows", type=Path)
    ap.add_argument("--tests", default="tests")
    ap.add_argument("--pythonpath", default=None, help="the package's import root in REPO (default: src if present)")
    args = ap.parse_args()
    rows_path = args.rows
    if rows_path is None:
        rows_path = Path(tempfile.mkdtemp()) / "rows.jsonl"
        cmd, env = gate_cmd()
        subprocess.run([*cmd, "run", "--rev", "HEAD", "--out", str(rows_path)], cwd=args.repo,
                       capture_output=True, text=True, check=False, env=env)
    pythonpath = args.pythonpath if args.pythonpath is not None else ("src" if (args.repo / "src").is_dir() else "")
    result = agreement(args.repo, rows_path, args.tests, pythonpath)
    print(f"{args.repo.resolve().name}: {result['entries']} entries, plain pytest passes {result['plain_pass']}, "
          f"sealed passes {result['sealed_pass']}, agree {result['agree']}/{result['entries']} "
          f"({100 * result['agree'] / max(result['entries'], 1):.1f}%)")
    print("\n".join(f"  {d['prop']}: plain {d['plain']}, sealed {d['sealed']}" for d in result["differ"]))
    return 0


def agreement(repo: Path, rows_path: Path, tests: str, pythonpath: str = "") -> dict[str, Any]:
    """Entries, pass counts on both sides, agreeing entries and each disagreement (with the gate's error)."""
    sealed: dict[str, list[str]] = defaultdict(list)
    errors: dict[str, str] = {}
    for line in rows_path.read_text().splitlines():
        row = json.loads(line)
        sealed[row["prop"]].append(row["status"])
        if row["status"] != "pass" and row["prop"] not in errors:
            errors[row["prop"]] = f"{row.get('witness')}: {(row.get('error') or '').strip()[-300:]}"
    cases = plain_cases(repo, tests, pythonpath)
    catalog = entries(repo)
    agree, plain_pass, sealed_pass, differ = 0, 0, 0, []
    for pid, oracle in catalog.items():
        named = [s for n, s in cases.items() if n == oracle or (
            "[" not in oracle and (n.startswith(oracle + "[") or n.startswith(oracle + "::")))]
        plain_ok = bool(named) and all(s == "pass" for s in named)
        sealed_ok = bool(sealed.get(pid)) and all(s == "pass" for s in sealed[pid])
        plain_pass, sealed_pass = plain_pass + plain_ok, sealed_pass + sealed_ok
        if plain_ok == sealed_ok:
            agree += 1
        else:
            differ.append({"prop": pid, "oracle": oracle, "plain": "pass" if plain_ok else "fail",
                           "plain_cases": sorted(set(named)), "sealed": "pass" if sealed_ok else "fail",
                           "error": errors.get(pid, "")})
    return {"entries": len(catalog), "plain_pass": plain_pass, "sealed_pass": sealed_pass, "agree": agree,
            "differ": differ}


if __name__ == "__main__":
    raise SystemExit(main())
