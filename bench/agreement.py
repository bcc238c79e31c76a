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
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def plain_cases(repo: Path, tests: str) -> dict[str, str]:
    """Node id -> pass | fail | skip, from one plain pytest run."""
    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "junit.xml"
        subprocess.run([sys.executable, "-m", "pytest", tests, "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                        f"--junitxml={xml}"], cwd=repo, capture_output=True, text=True, check=False)
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
    args = ap.parse_args()
    rows_path = args.rows
    if rows_path is None:
        rows_path = Path(tempfile.mkdtemp()) / "rows.jsonl"
        subprocess.run([str(ROOT / ".venv/bin/gate"), "run", "--rev", "HEAD", "--out", str(rows_path)], cwd=args.repo,
                       capture_output=True, text=True, check=False)
    sealed: dict[str, list[str]] = defaultdict(list)
    for line in rows_path.read_text().splitlines():
        row = json.loads(line)
        sealed[row["prop"]].append(row["status"])
    cases = plain_cases(args.repo, args.tests)
    catalog = entries(args.repo)
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
            differ.append(f"  {pid}: plain {'pass' if plain_ok else 'fail'}, sealed {'pass' if sealed_ok else 'fail'}")
    print(f"{args.repo.resolve().name}: {len(catalog)} entries, plain pytest passes {plain_pass}, "
          f"sealed passes {sealed_pass}, "
          f"agree {agree}/{len(catalog)} ({100 * agree / max(len(catalog), 1):.1f}%)")
    print("\n".join(differ))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
