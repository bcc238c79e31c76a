"""Where the gate runs: which CI, and which of the repository's files defined the job (pure, environment in)."""

from __future__ import annotations

from collections.abc import Collection, Mapping

FALSE = ("", "0", "false", "no", "off")
CONTAINMENT_FIX = (
    "make bubblewrap work for this user: apt-get install bubblewrap; on ubuntu-24.04 (GitHub's runners) also "
    "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0; in a Docker job run the container as root "
    "with --privileged (or --security-opt seccomp=unconfined --security-opt apparmor=unconfined); or write "
    "runner.containment: none in gate.yaml to run production uncontained on purpose")


def _set(environ: Mapping[str, str], name: str) -> bool:
    return environ.get(name, "").strip().lower() not in FALSE


def where(environ: Mapping[str, str]) -> str | None:
    """The CI this process runs in (``GITHUB_ACTIONS``, ``GITLAB_CI``, ``CI``), else None."""
    if _set(environ, "GITHUB_ACTIONS"):
        return "GitHub Actions"
    if _set(environ, "GITLAB_CI"):
        return "GitLab CI"
    if _set(environ, "CI"):
        return "CI"
    return None


def definition(environ: Mapping[str, str]) -> str | None:
    """The repository path of the file that defined this job, when it lives in the repository being judged.

    GitHub: ``GITHUB_WORKFLOW_REF`` is ``owner/repo/.github/workflows/gate.yml@refs/...``.  GitLab:
    ``CI_CONFIG_PATH`` is ``.gitlab-ci.yml`` unless the configuration comes from another project
    (``path@group/project``) or a URL, which a merge request cannot edit.
    """
    if _set(environ, "GITHUB_ACTIONS"):
        ref = environ.get("GITHUB_WORKFLOW_REF", "")
        path = ref.rpartition("@")[0] if "@" in ref else ref
        parts = path.split("/")
        return "/".join(parts[2:]) if len(parts) > 2 else None
    if _set(environ, "GITLAB_CI"):
        path = environ.get("CI_CONFIG_PATH", "").strip() or ".gitlab-ci.yml"
        return None if "@" in path or "://" in path else path.lstrip("/")
    return None


def changed_definition(environ: Mapping[str, str], changed: Collection[str]) -> str | None:
    """The job's own definition when the patch changes it: then the patch may have written its judge."""
    path = definition(environ)
    return path if path is not None and path in changed else None
