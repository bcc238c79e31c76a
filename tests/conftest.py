from __future__ import annotations

import os

import pytest

# Tests make their own repositories; a developer's git identity or hooks must not leak in.
os.environ.setdefault("GIT_CONFIG_NOSYSTEM", "1")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "docker" in item.keywords:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def docker_engine() -> object:
    """A docker client whose engine answers and has the sandbox image; in CI a missing one fails."""
    reason = ""
    try:
        import docker

        client = docker.from_env(timeout=30)
        client.ping()
        client.images.get("mergegate-sandbox:latest")
        return client
    except ImportError:
        reason = "the docker SDK is not installed"
    except Exception as exc:  # no engine, or no image
        reason = f"no Docker engine with mergegate-sandbox:latest ({type(exc).__name__}: {exc})"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI must run the sandbox tests: run .ci/setup-docker.sh first")
    pytest.skip(f"{reason}; run .ci/setup-docker.sh")


@pytest.fixture(scope="session")
def bwrap_works() -> bool:
    """bubblewrap can make a sandbox here; without it the containment tests skip, in CI they fail."""
    from mergegate.runner.subject import sandbox

    works, _disable, why = sandbox.probe()
    if works:
        return True
    if os.environ.get("CI") == "true":
        pytest.fail(f"{why}; CI must run the containment tests: apt-get install bubblewrap")
    pytest.skip(f"{why}; install bubblewrap (Debian: apt-get install bubblewrap)")
