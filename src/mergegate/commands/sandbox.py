"""``gate sandbox build | doctor``: the drafter's image, built offline, and a health check."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from mergegate.errors import UsageError
from mergegate.git import core
from mergegate.records.policy import Drafter


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    build = sub.add_parser("build", help="build the sandbox image without a registry")
    source = build.add_mutually_exclusive_group()
    source.add_argument("--base-image", metavar="IMAGE", help="a local image with python3.11 (never pulled)")
    source.add_argument("--rootfs", metavar="DIR", type=Path, help="an existing root filesystem directory")
    build.add_argument("--image", help="tag to build (default: drafter.image of gate.yaml)")
    build.add_argument("--if-missing", action="store_true", help="do nothing when the image exists")
    build.add_argument("--project-deps", action="store_true",
                       help="also install pyproject.toml's [project].dependencies (besides drafter.image_requirements)")
    doctor = sub.add_parser("doctor", help="check the engine, the image and the sandbox options")
    doctor.add_argument("--image", help="image to check (default: drafter.image of gate.yaml)")


def _drafter() -> Drafter:
    """The drafter section of the repository's trusted policy; the defaults outside a gated repository."""
    try:
        from mergegate.records import repo

        return repo.trusted_policy(core.toplevel()).drafter
    except UsageError:
        return Drafter()


def _image(args: argparse.Namespace) -> str:
    return str(args.image) if args.image else _drafter().image


def run(args: argparse.Namespace) -> int:
    if args.action == "build":
        return _build(args)
    from mergegate.drafter import doctor

    return doctor.report(_image(args), _drafter().runtime)


def _build(args: argparse.Namespace) -> int:
    from docker.errors import ImageNotFound

    from mergegate.drafter import image as image_mod
    from mergegate.drafter import sandbox

    tag = _image(args)
    client = sandbox.connect()
    if args.if_missing:
        try:
            stale = image_mod.current(client.images.get(tag).labels or {})
            if stale is None:
                print(f"image    {tag} present")
                return 0
            print(f"image    {tag} present but {stale}: rebuilding")
        except ImageNotFound:
            pass
    started = time.monotonic()
    log: list[str] = []
    extra = list(_drafter().image_requirements)
    if args.project_deps:
        extra += image_mod.project_dependencies(core.toplevel())
    try:
        if args.base_image:
            image_mod.build_from_image(client, tag, args.base_image, log, extra)
        else:
            image_mod.build_from_rootfs(client, tag, args.rootfs, log, extra)
    finally:
        print("\n".join(log))
    print(f"built    {tag} in {time.monotonic() - started:.1f} s")
    return 0
