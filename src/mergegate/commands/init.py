"""``gate init``: scaffold a repository; never overwrites a user's file."""

from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path

from mergegate.git import core
from mergegate.records import manifest, policy
from mergegate.records.fsutil import work_area

ACTION = "mergegate/mergegate@v1"
CI_FILES = {"github": (".github/workflows/gate.yml", "github-workflow.yml"),
            "gitlab": (".gitlab-ci.yml", "gitlab-ci.yml")}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ci", nargs="?", choices=sorted(CI_FILES),
                        help="write the CI file that runs the gate: github (.github/workflows/gate.yml, "
                        "pull_request_target) or gitlab (.gitlab-ci.yml for a separate policy project)")
    parser.add_argument("--action", default=ACTION, metavar="OWNER/REPO@REF",
                        help=f"the action the GitHub workflow uses (default: {ACTION}; pin a commit id)")
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
    if args.ci:
        return _ci(args)
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


def _ci(args: argparse.Namespace) -> int:
    """``gate init github|gitlab``: the CI file, never over an existing one."""
    import re

    from mergegate.errors import UsageError

    if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(/[A-Za-z0-9_./-]+)?@[A-Za-z0-9_./-]+", args.action):
        raise UsageError(f"--action {args.action!r} is not OWNER/REPO@REF", f"write e.g. --action {ACTION}")
    top = core.toplevel()
    rel, template = CI_FILES[args.ci]
    report: list[str] = []
    written: list[str] = []
    _create(top / rel, _template(template).replace("{action}", args.action), top, report, written)
    if args.ci == "github" and written and (top / policy.POLICY_FILE).is_file():
        from mergegate.records import oracle_manifest

        pol = policy.parse((top / policy.POLICY_FILE).read_bytes(), policy.POLICY_FILE)
        if oracle_manifest.resign_if_ours(pol, top, written)[0]:
            report.append(f"re-signed {pol.paths.manifest} (it lists {rel}, a guarded file)")
    print("\n".join(report))
    if args.ci == "github" and not re.search(r"@[0-9a-f]{40}$", args.action):
        print(f"\nwarning: {args.action} is a tag, which its owner can move: pin a commit, "
              "--action OWNER/REPO@<40-hex commit id> (and keep the tag as a comment)")
    if args.ci == "github":
        print(f"\n{rel} is guarded (paths.policy has .github/**): commit it on its own, with the manifest "
              "re-signed: git add -- .github oracles/MANIFEST.sha256 && git commit -m 'ci: run the gate'")
        print("Then require its check in a ruleset: docs/ci-github.md (required check gate from the GitHub "
              "Actions app, no bypass for agents).")
    else:
        print(f"\n{rel} belongs in a separate policy project (group/gate-policy); set the judged project's "
              "Settings > CI/CD > CI/CD configuration file to .gitlab-ci.yml@group/gate-policy: docs/ci-gitlab.md.")
    return 0
