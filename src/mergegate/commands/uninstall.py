"""``gate uninstall``: remove the hooks ``gate install`` wrote, and nothing else."""

from __future__ import annotations

import argparse
from pathlib import Path

from mergegate.commands.install import MARKER
from mergegate.errors import UsageError
from mergegate.git import core


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pre-receive", metavar="BARE_REPO", help="remove the server hook from a bare repository")


def remove_ours(hook: Path, marker: str) -> str:
    """Delete ``hook`` if mergegate wrote it (it carries ``marker``); say what was done."""
    if not hook.exists() and not hook.is_symlink():
        return f"no hook at {hook}"
    if hook.is_symlink() or not hook.is_file() or marker not in hook.read_text(errors="replace"):
        return f"kept {hook} (not written by mergegate)"
    hook.unlink()
    return f"removed {hook}"


def run(args: argparse.Namespace) -> int:
    if args.pre_receive:
        from mergegate.hooks.pre_receive import MARKER as SERVER_MARKER

        bare = Path(args.pre_receive).absolute()
        if not bare.is_dir():
            raise UsageError(f"{bare}: not a git repository", "pass the bare repository given to gate install")
        core.ensure_repo(bare)
        print(remove_ours(core.git_path("hooks", bare) / "pre-receive", SERVER_MARKER))
        return 0
    core.ensure_repo()
    print(remove_ours(core.git_path("hooks") / "pre-commit", MARKER))
    config = core.toplevel() / ".pre-commit-config.yaml"
    if "gate hook" in _text(config) or "id: gate-" in _text(config):
        print("pre-commit runs mergegate's hooks from .pre-commit-config.yaml: remove their entries there "
              "(a policy file: an oracle-only commit), or `pre-commit uninstall` to drop pre-commit itself")
    return 0


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
