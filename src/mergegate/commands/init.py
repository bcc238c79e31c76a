"""``gate init``: scaffold a repository; never overwrites a user's file."""

from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path

from mergegate.git import core
from mergegate.records import manifest, policy
from mergegate.records.fsutil import work_area


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pre-commit-config", action="store_true",
        help="also write .pre-commit-config.yaml (only if it does not exist)",
    )


def _template(name: str) -> str:
    return resources.files("mergegate").joinpath("templates", name).read_text()


BYTECODE_IGNORE = "# Running the properties (gate test, pytest) makes bytecode; it is never part of the oracle.\n" \
    "__pycache__/\n*.py[cod]\n"


def _create(path: Path, text: str, top: Path, report: list[str], written: list[str]) -> None:
    rel = path.relative_to(top).as_posix()
    if path.exists() or path.is_symlink():
        report.append(f"kept     {rel} (exists)")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    report.append(f"created  {rel}")
    written.append(rel)


def run(args: argparse.Namespace) -> int:
    top = core.toplevel()
    report: list[str] = []
    written: list[str] = []
    _create(top / policy.POLICY_FILE, policy.DEFAULT_TEXT, top, report, written)
    pol = policy.parse((top / policy.POLICY_FILE).read_bytes(), policy.POLICY_FILE)
    paths = pol.paths
    for pattern in (*paths.oracle[:1], *paths.fixtures[:1]):
        root = pattern.split("*", 1)[0].rstrip("/")
        if root:
            _create(top / root / ".gitkeep", "", top, report, written)
    for pattern in paths.oracle[:1]:
        root = pattern.split("*", 1)[0].rstrip("/")
        if root:
            _create(top / root / ".gitignore", BYTECODE_IGNORE, top, report, written)
    _create(top / paths.catalog / "claimed.yaml", _template("claimed.yaml"), top, report, written)
    _create(top / paths.ledger, _template("freeze_ledger.yaml"), top, report, written)
    entry = _template("pre-commit-entry.yaml")
    if args.pre_commit_config:
        _create(top / ".pre-commit-config.yaml", "repos:\n" + entry, top, report, written)
    if not (top / ".gate" / ".gitignore").exists():
        work_area(top)
        report.append("created  .gate/.gitignore (mergegate's work area, never committed)")
    _manifest(pol, top, report, written)
    print("\n".join(report))
    if not args.pre_commit_config:
        print("\nAdd the hook to .pre-commit-config.yaml (or run `gate init --pre-commit-config`): the single hook")
        print("gate-checks runs the three checks (guard, no-mix, manifest) in one process; `gate` must be on PATH.")
        print("repos:\n" + entry.rstrip())
        print("\nWithout pre-commit: `gate install` writes the same checks as a plain git hook.")
    print("\nThen commit these files on their own: git add -A && git commit -m 'Adopt mergegate'")
    print("\nOn the server (gate install --pre-receive), tell agents from people: list the agents' "
          "logins in agents.pushers, or require signed oracle commits, or protect the default branch "
          "(docs/server.md, Identify agents); until then the hook warns on every push.")
    return 0


def _manifest(pol: policy.Policy, top: Path, report: list[str], written: list[str]) -> None:
    """Write the manifest if absent; re-sign it for the files this run made; say so if it still does not verify."""
    from mergegate.records import oracle_manifest

    manifest_path = top / pol.paths.manifest
    if manifest_path.exists():
        report.append(f"kept     {pol.paths.manifest} (exists)")
    else:
        text = manifest.render(manifest.worktree_rows(pol, top))
        manifest_path.parent.mkdir(parents=True, exist_ok=True)
        manifest_path.write_bytes(text)
        report.append(f"created  {pol.paths.manifest}")
        written.append(pol.paths.manifest)
    resigned, wrong = oracle_manifest.resign_if_ours(pol, top, written)
    if resigned:
        report.append(f"re-signed {pol.paths.manifest} (it lists the guarded files created above)")
    if wrong:
        report.append(f"warning  {pol.paths.manifest} does not verify against the work tree:")
        report += [f"  {line}" for line in wrong]
        report.append(f"  {oracle_manifest.FIX}")
