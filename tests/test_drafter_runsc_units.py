"""gVisor's registration checked before a run (pure; no engine needed)."""

from __future__ import annotations

from typing import Any

import pytest

from mergegate.drafter import sandbox
from mergegate.drafter.options import runsc_missing_args
from mergegate.errors import UsageError

GOOD = ["--network=none", "--oci-seccomp", "--host-uds=open"]


@pytest.mark.parametrize(("registration", "missing"), [
    ({"path": "/usr/bin/runsc", "runtimeArgs": GOOD}, []),
    ({"path": "/usr/local/bin/runsc", "runtimeArgs": ["-oci-seccomp=true"]}, []),
    ({"path": "/usr/bin/runsc"}, ["--oci-seccomp"]),
    ({"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none", "--oci-seccomp=false"]}, ["--oci-seccomp"]),
    ({"path": "runc"}, []),
    ({"path": "/opt/kata/bin/kata-runtime", "runtimeArgs": []}, []),
    ({}, []),
])
def test_runsc_without_oci_seccomp_is_named(registration: dict[str, Any], missing: list[str]) -> None:
    assert runsc_missing_args(registration) == missing


class EngineInfo:
    """Only what require_runtime reads of an engine: its ``docker info``."""

    def __init__(self, runtimes: dict[str, Any]) -> None:
        self.runtimes = runtimes

    def info(self) -> dict[str, Any]:
        return {"Runtimes": self.runtimes, "DefaultRuntime": "runc"}


def test_a_runsc_that_would_drop_our_seccomp_profile_is_refused() -> None:
    bare = EngineInfo({"runc": {"path": "runc"},
                       "runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}})
    with pytest.raises(UsageError) as err:
        sandbox.require_runtime(bare, "runsc")
    assert "registered without --oci-seccomp" in str(err.value) and "SIGHUP" in str(err.value.fix)
    assert sandbox.require_runtime(bare, None) == "runc"
    good = EngineInfo({"runc": {"path": "runc"}, "runsc": {"path": "/usr/bin/runsc", "runtimeArgs": GOOD}})
    assert sandbox.require_runtime(good, "runsc") == "runsc"
