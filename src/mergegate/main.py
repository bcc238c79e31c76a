"""The ``gate`` command line: parsing and dispatch only.

Each command lives in ``mergegate.commands.<name>`` with ``configure(parser)``
and ``run(args) -> int``.  Only the chosen command's module is imported, so the
hook path never pays for rich, hypothesis, docker or httpx.
"""

from __future__ import annotations

import errno
import os
import sys

from mergegate import __version__
from mergegate.errors import EXIT_INTERNAL, EXIT_USAGE, GateError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (4 ms on the hook path)

if TYPE_CHECKING:  # argparse and friends load only when a command is parsed (hooks stay fast)
    import argparse
    from collections.abc import Sequence

HOOK_NAMES = ("guard", "no-mix", "manifest", "all")

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("mergegate.commands.init", "scaffold gate.yaml, the oracle tree, manifest and ledger"),
    "split": ("mergegate.commands.split", "classify a diff's paths; JSON per path class"),
    "manifest": ("mergegate.commands.manifest", "sign or verify oracles/MANIFEST.sha256"),
    "digest": ("mergegate.commands.digest", "print the fixture digest of a directory (seed 000)"),
    "install": ("mergegate.commands.install", "install the checks as plain git hooks"),
    "doctor": ("mergegate.commands.doctor", "check an adoption: policy, manifest, catalog, hooks, server settings"),
    "uninstall": ("mergegate.commands.uninstall", "remove the hooks gate install wrote (and nothing else)"),
    "hook": ("mergegate.commands.hook", "run one client-side hook (used by pre-commit)"),
    "commit": ("mergegate.commands.commit", "commit a staged fix and its test apart: the oracle first, then the fix"),
    "pre-receive": ("mergegate.commands.pre_receive", "server-side hook: judge every pushed commit"),
    "freeze": ("mergegate.commands.freeze", "list, lint, expire, open or propose freezes"),
    "verdict": ("mergegate.commands.verdict", "apply freezes to runs and combine (seed 000)"),
    "admit": ("mergegate.commands.admit", "admission judge for a patch file (seed 002)"),
    "decide": ("mergegate.commands.decide", "parent/patch differential decision (seed 003)"),
    "score": ("mergegate.commands.score", "merge scorecard of a patch (seed 004)"),
    "run": ("mergegate.commands.run", "run the property catalog at a revision"),
    "test": ("mergegate.commands.test", "run the properties locally on the work tree (pytest; --sealed as gate check)"),
    "catalog": ("mergegate.commands.catalog", "adopt tests, list unguarded ones, compare isolations"),
    "seeds": ("mergegate.commands.seeds", "print the policy's seeds, or fresh ones for a CI matrix"),
    "merge-runs": ("mergegate.commands.merge_runs", "merge sharded run files"),
    "diff": ("mergegate.commands.diff", "differential run of base and head"),
    "check": ("mergegate.commands.check", "the whole pipeline: verdict and evidence"),
    "deps": ("mergegate.commands.deps", "print or install the trusted revision's runtime dependencies"),
    "demo": ("mergegate.commands.demo", "run the bundled example scenarios"),
    "draft-props": ("mergegate.commands.draft_props", "draft candidate properties in the sandbox"),
    "queue": ("mergegate.commands.queue", "list, show, accept or reject drafted candidates"),
    "sandbox": ("mergegate.commands.sandbox", "build or check the drafter's container image"),
}


def _parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(
        prog="gate",
        description="mergegate: decide whether an agent-written patch may merge.",
        epilog="Exit codes: 0 pass, 1 the gate said no, 2 usage or configuration error, 3 internal error.",
    )
    parser.add_argument("--version", action="version", version=f"mergegate {__version__}")
    parser.add_argument("-C", dest="chdir", metavar="DIR", help="run as if started in DIR (like git -C)")
    return parser


def _chosen(argv: Sequence[str]) -> str | None:
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == "-C":
            skip = True
            continue
        if not arg.startswith("-"):
            return arg
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) >= 2 and argv[0] == "hook" and argv[1] in HOOK_NAMES:
        from mergegate.hooks import fast

        if fast.accept():  # an ordinary production commit: accepted without the full machinery
            return 0
    return _dispatch(argv)


def _dispatch(argv: list[str]) -> int:
    import importlib
    import traceback

    parser = _parser()
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = _chosen(argv)
    module = None
    for name, (module_name, help_text) in COMMANDS.items():
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            module = importlib.import_module(module_name)
            module.configure(cmd)
    args = parser.parse_args(argv)
    if module is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        if args.chdir:
            os.chdir(args.chdir)
        code: int = module.run(args)
        return code
    except GateError as exc:
        from mergegate import textsafe

        print(f"gate {args.command}: {textsafe.line(exc.render())}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"gate {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_INTERNAL
    except (IsADirectoryError, NotADirectoryError) as exc:  # a folder where a file belongs, or the reverse
        what = "a folder, not a file" if isinstance(exc, IsADirectoryError) else "not a folder"
        print(f"gate {args.command}: {exc.filename or ''}: {what}; fix: pass the file the command reads",
              file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:  # a path the user chose (gate.yaml, an argument, -C): theirs to shorten
            print(f"gate {args.command}: {_shown(exc.filename)}: a path too long for the file system; fix: shorten "
                  "it (at most 255 bytes a name, 4096 a path), in gate.yaml's paths or the argument", file=sys.stderr)
            return EXIT_USAGE
        print(f"gate {args.command}: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        return EXIT_INTERNAL
    except Exception:  # fail closed: an unexpected error is never a pass
        traceback.print_exc()
        print(f"gate {args.command}: internal error (exit 3, nothing was passed)", file=sys.stderr)
        return EXIT_INTERNAL


def _shown(filename: object) -> str:
    """A path for a one-line message: its first and last 60 characters around an ellipsis."""
    text = str(filename or "a path")
    return text if len(text) <= 140 else f"{text[:60]}...{text[-60:]} ({len(text)} characters)"


if __name__ == "__main__":
    raise SystemExit(main())
