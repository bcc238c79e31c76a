from __future__ import annotations

import os

import pytest

# Tests make their own repositories; a developer's git identity or hooks must not leak in.
os.environ.setdefault("GIT_CONFIG_NOSYSTEM", "1")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "docker" in item.keywords:
            item.add_marker(pytest.mark.slow)
