"""``gate init``: scaffold a repository; never overwrites a user's file."""

from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path

from mergegate import gitio, manifest, policy
from mergegate.fsutil import work_area


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pre-commit-config", action="store_true",
        help="also write .pre-commit-config.yaml (only if it does not exist)",
    )


def _template(name: str) -> str:
    return resources.files("mergegate").joinpath("templates", name).read_text()


def _create(path: Path, text: str, top: Path, report: list[str]) -> None:
    rel = path.relative_to(top).as_posix()
    if path.exists() or path.is_symlink():
        report.append(f"kept     {rel} (exists)")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    report.append(f"created  {rel}")


def run(args: argparse.Namespace) -> int:
    top = gitio.toplevel()
    report: list[str] = []
    _create(top / policy.POLICY_FILE, policy.DEFAULT_TEXT, top, report)
    pol = policy.parse((top / policy.POLICY_FILE).read_bytes(), policy.POLICY_FILE)
    paths = pol.paths
    for pattern in (*paths.oracle[:1], *paths.fixtures[:1]):
        root = pattern.split("*", 1)[0].rstrip("/")
        if root:
            _create(top / root / ".gitkeep", "", top, report)
    _create(top / paths.catalog / "claimed.yaml", _template("claimed.yaml"), top, report)
    _create(top / paths.ledger, _template("freeze_ledger.yaml"), top, report)
    entry = _template("pre-commit-entry.yaml")
    config = top / ".pre-commit-config.yaml"
    if args.pre_commit_config:
        _create(config, "repos:\n" + entry, top, report)
    if not (top / ".gate" / ".gitignore").exists():
        work_area(top)
        report.append("created  .gate/.gitignore (mergegate's work area, never committed)")
    manifest_path = top / paths.manifest
    if manifest_path.exists():
        report.append(f"kept     {paths.manifest} (exists)")
    else:
        text = manifest.render(manifest.worktree_rows(pol, top))
        manifest_path.parent.mkdir(parents=True, exist_ok=True)
        manifest_path.write_bytes(text)
        report.append(f"created  {paths.manifest}")
    print("\n".join(report))
    if not args.pre_commit_config:
        print("\nAdd the hooks to .pre-commit-config.yaml (or run `gate init --pre-commit-config`):")
        print("repos:\n" + entry.rstrip())
        print("\nWithout pre-commit: `gate install` writes them as a plain git hook.")
    print("\nThen commit these files on their own: git add -A && git commit -m 'Add mergegate'")
    print("\nOn the server (gate install --pre-receive), tell agents from people: list the agents' "
          "logins in agents.pushers, or require signed oracle commits, or protect the default branch "
          "(docs/server.md, Identify agents); until then the hook warns on every push.")
    return 0
