"""``gate install``: the client checks as a plain git ``pre-commit`` hook (no pre-commit needed),
or ``--pre-receive BARE`` for a server repository."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from mergegate.git import core
from mergegate.hooks.installer import write_hook

MARKER = "# installed by `gate install` (mergegate)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--force", action="store_true", help="replace a hook mergegate did not write")
    parser.add_argument("--pre-receive", metavar="BARE_REPO", help="install the server hook into a bare repository")
    parser.add_argument("--format", choices=("plain", "gitlab"), default="plain",
                        help="server hook message format (gitlab prefixes GL-HOOK-ERR:)")


def hook_script(python: str) -> str:
    """The plain hook: the absolute interpreter, so it works outside any virtualenv."""
    return (
        "#!/bin/sh\n"
        f"{MARKER}\n"
        "# runs gate-guard, gate-no-mix and gate-manifest on the commit being made\n"
        f"exec {shlex.quote(python)} -m mergegate hook all\n"
    )


def run(args: argparse.Namespace) -> int:
    if args.pre_receive:
        from mergegate.hooks import pre_receive

        target = pre_receive.install_pre_receive(Path(args.pre_receive), force=args.force, fmt=args.format)
        print(f"installed {target}")
        return 0
    hooks_dir = core.git_path("hooks")
    target = hooks_dir / "pre-commit"
    write_hook(target, hook_script(sys.executable), MARKER, args.force,
               "use pre-commit (see README), merge the hooks by hand, or pass --force to replace it")
    print(f"installed {target}")
    return 0
