"""Build the drafter image without a registry.

Three sources for the root filesystem, all offline once cached:
- default: ``debootstrap --variant=minbase --include=python3 bookworm`` from the Debian
  mirror this machine's apt already uses, cached as a tarball;
- ``--rootfs DIR``: an existing root filesystem directory;
- ``--base-image IMAGE``: an image already in the local engine (never pulled).

Each is a base image for ``sandbox/Dockerfile`` (shipped in the package as
``drafter/files/Dockerfile``), built with no network and no pull: the one definition of the
image.  The Python packages (hypothesis at the host's version, black for the ghostwriter)
come from a local wheelhouse filled once by ``pip download``, installed with
``pip --no-index`` into the build context.  Bookworm's python3 is 3.11, like the host.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path

from mergegate.drafter.options import SANDBOX_UID
from mergegate.errors import InternalError, UsageError

SUITE = "bookworm"
SITE = "usr/local/lib/python3.11/dist-packages"
FORMAT = "3"  # 3: built from sandbox/Dockerfile; 2: no setuid or setgid file, /out mount point, project requirements
FORMAT_LABEL = "mergegate.sandbox.format"  # set by the Dockerfile's LABEL (a test keeps the two equal)
DOCKERFILE_LABEL = "mergegate.sandbox.dockerfile"  # the digest of the Dockerfile that built the image
HYPOTHESIS_LABEL = "mergegate.sandbox.hypothesis"  # the Hypothesis baked in: the host's when it was built
BASE_REPOSITORY = "mergegate-sandbox-base"


def cache_dir() -> Path:
    return Path(os.environ.get("GATE_SANDBOX_CACHE", "/var/cache/mergegate"))


def host_hypothesis() -> str:
    import hypothesis

    return str(hypothesis.__version__)


def requirements(extra: Sequence[str] = ()) -> list[str]:
    """What the container needs: hypothesis pinned to the host's, black for the ghostwriter, the project's own."""
    return [f"hypothesis=={host_hypothesis()}", "black", *extra]


def current(labels: dict[str, str]) -> str | None:
    """Why an image with ``labels`` is not the one a build would make now (None: it is): another format, another
    ``sandbox/Dockerfile``, or another Hypothesis than the host's (``gate sandbox doctor`` requires the host's)."""
    if labels.get(FORMAT_LABEL) != FORMAT or labels.get(DOCKERFILE_LABEL) != dockerfile_digest():
        return "not built from this sandbox/Dockerfile"
    host = host_hypothesis()
    if labels.get(HYPOTHESIS_LABEL) != host:
        return f"built with Hypothesis {labels.get(HYPOTHESIS_LABEL) or '(unknown)'}, the host has {host}"
    return None


def project_dependencies(top: Path) -> list[str]:
    """``[project].dependencies`` of ``top/pyproject.toml`` (none without one)."""
    import tomllib

    path = top / "pyproject.toml"
    if not path.is_file():
        return []
    try:
        deps = tomllib.loads(path.read_text()).get("project", {}).get("dependencies", [])
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not TOML ({exc})", "fix pyproject.toml or leave out --project-deps") from None
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        raise UsageError(f"{path}: [project].dependencies is not a list of strings", "fix pyproject.toml")
    return deps


# ---------------------------------------------------------------- pure helpers

def mirror_from_sources(texts: Iterable[str], suite: str = SUITE) -> str | None:
    """The first Debian mirror that serves ``suite`` in apt sources (one-line or deb822)."""
    for text in texts:
        for stanza in re.split(r"\n\s*\n", text):
            fields = dict(re.findall(r"^([A-Za-z-]+):[ \t]*(.*)$", stanza, re.M))
            if fields.get("Types", "").split()[:1] == ["deb"] and suite in fields.get("Suites", "").split():
                return fields.get("URIs", "").split()[0] if fields.get("URIs") else None
            for line in stanza.splitlines():
                parts = line.split("#", 1)[0].split()
                if parts[:1] == ["deb"]:
                    parts = [p for p in parts[1:] if not p.startswith("[")]
                    if len(parts) >= 2 and parts[1] == suite:
                        return parts[0]
    return None


def _apt_sources() -> list[str]:
    files = [Path("/etc/apt/sources.list")]
    d = Path("/etc/apt/sources.list.d")
    if d.is_dir():
        files += sorted(p for p in d.iterdir() if p.suffix in (".list", ".sources"))
    return [p.read_text(errors="replace") for p in files if p.is_file()]


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise InternalError(f"{what} failed: {tail[0]}")


# ---------------------------------------------------------------- steps

def base_tarball(log: list[str]) -> Path:
    """The cached debootstrap root filesystem as a tarball (made once)."""
    tarball = cache_dir() / f"{SUITE}-minbase-python3.tar"
    if tarball.is_file():
        log.append(f"rootfs   cached {tarball}")
        return tarball
    if shutil.which("debootstrap") is None or os.geteuid() != 0:
        raise UsageError("building the root filesystem needs debootstrap and root",
                         "run as root with debootstrap installed, or pass --rootfs DIR or --base-image IMAGE")
    mirror = mirror_from_sources(_apt_sources())
    if mirror is None:
        raise UsageError(f"no Debian {SUITE} mirror in the apt sources",
                         "pass --rootfs DIR or --base-image IMAGE")
    cache_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir(), prefix="rootfs.") as tmp:
        root = Path(tmp) / "root"
        _run(["debootstrap", "--variant=minbase", "--include=python3", SUITE, str(root), mirror], "debootstrap")
        for junk in ("var/cache/apt/archives", "usr/share/doc", "usr/share/man", "var/lib/apt/lists"):
            shutil.rmtree(root / junk, ignore_errors=True)
        _run(["tar", "-C", str(root), "-cf", f"{tarball}.tmp", "."], "tar")
        os.replace(f"{tarball}.tmp", tarball)
    log.append(f"rootfs   built {tarball} from {mirror}")
    return tarball


def wheelhouse(log: list[str], extra: Sequence[str] = ()) -> Path:
    """The local wheelhouse; filled through pip's ordinary client at build time (never at draft time)."""
    wheels = cache_dir() / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    have = {p.name.split("-")[0].lower() for p in wheels.glob("*.whl")}
    pinned = any(p.name.startswith(f"hypothesis-{host_hypothesis()}-") for p in wheels.glob("*.whl"))
    if not (pinned and "black" in have) or extra:
        _run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "-d", str(wheels),
              *requirements(extra)], "pip download")
        log.append(f"wheels   downloaded into {wheels}" + (f" (with {', '.join(extra)})" if extra else ""))
    else:
        log.append(f"wheels   cached {wheels}")
    return wheels


def install_site(wheels: Path, target: Path, extra: Sequence[str] = ()) -> None:
    """Install the requirements into ``target`` from the wheelhouse only (no index)."""
    _run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-compile", "--find-links", str(wheels),
          "--target", str(target), *requirements(extra)], "pip install")


def dockerfile() -> str:
    """``sandbox/Dockerfile`` of the repository (shipped in the package as ``drafter/files/Dockerfile``)."""
    return resources.files("mergegate.drafter").joinpath("files/Dockerfile").read_text()


def dockerfile_digest() -> str:
    """The first 12 hex digits of the Dockerfile's SHA-256: the label that says which file built an image."""
    return hashlib.sha256(dockerfile().encode()).hexdigest()[:12]


def import_base(client: object, root: Path, log: list[str]) -> str:
    """``tar -C root -c . | docker import`` as a local base image (no changes: the Dockerfile makes them)."""
    tag = f"{BASE_REPOSITORY}:{_tree_id(root)}"
    with tempfile.NamedTemporaryFile(dir=cache_dir(), suffix=".tar") as tmp:
        _run(["tar", "-C", str(root), "-cf", tmp.name, "."], "tar")
        client.api.import_image_from_file(tmp.name, repository=BASE_REPOSITORY,  # type: ignore[attr-defined]
                                          tag=tag.rpartition(":")[2])
    log.append(f"base     {tag} imported")
    return tag


def _tree_id(root: Path) -> str:
    digest = hashlib.sha256()
    for here, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(here, name)
            st = os.lstat(path)
            digest.update(f"{os.path.relpath(path, root)}\0{st.st_mode}\0{st.st_size}\0{int(st.st_mtime)}\n".encode())
    return digest.hexdigest()[:16]


def build_from_rootfs(client: object, image: str, rootfs: Path | None, log: list[str],
                      extra: Sequence[str] = ()) -> None:
    """Import the root filesystem (the cached debootstrap tree, or ``rootfs``) as a base; build the Dockerfile."""
    cache_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir(), prefix="image.") as tmp:
        root = Path(tmp) / "root"
        if rootfs is None:
            root.mkdir()
            _run(["tar", "-C", str(root), "-xf", str(base_tarball(log))], "tar")
        else:
            if not (rootfs / "usr/bin/python3").exists():
                raise UsageError(f"{rootfs} has no usr/bin/python3", "pass a root filesystem with Python 3.11")
            _run(["cp", "-a", f"{rootfs}/.", str(root)], "copy of the root filesystem")
        base = import_base(client, root, log)
    build_from_image(client, image, base, log, extra)


def build_from_image(client: object, image: str, base: str, log: list[str], extra: Sequence[str] = ()) -> None:
    """``sandbox/Dockerfile`` on ``base`` with the site packages as context: no network, no pull."""
    from docker.errors import BuildError, ImageNotFound

    try:
        client.images.get(base)  # type: ignore[attr-defined]
    except ImageNotFound:
        raise UsageError(f"base image {base} is not in the local engine",
                         "load it first (docker load), or pass --rootfs DIR; nothing is pulled") from None
    wheels = wheelhouse(log, extra)
    with tempfile.TemporaryDirectory(dir=cache_dir(), prefix="ctx.") as tmp:
        ctx = Path(tmp)
        install_site(wheels, ctx / "site", extra)
        (ctx / "Dockerfile").write_text(dockerfile())
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(str(ctx), arcname=".")
        buf.seek(0)
        try:
            client.images.build(fileobj=buf, custom_context=True, tag=image, pull=False,  # type: ignore[attr-defined]
                                network_mode="none", rm=True, forcerm=True,
                                buildargs={"BASE": base, "SANDBOX_UID": str(SANDBOX_UID)},
                                labels={DOCKERFILE_LABEL: dockerfile_digest(), HYPOTHESIS_LABEL: host_hypothesis()})
        except BuildError as exc:
            raise InternalError(f"docker build failed: {exc.msg}") from None
    log.append(f"image    {image} built from sandbox/Dockerfile on {base}")
