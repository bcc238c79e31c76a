"""Pure pieces of the drafter: container options, surface, host-side validation, install helpers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mergegate.drafter import accept, doctor, image, stage, surface
from mergegate.drafter.options import (
    LABEL,
    LABEL_DEADLINE,
    SANDBOX_UID,
    Limits,
    Mounts,
    container_options,
    denied_syscalls,
    seccomp_profile,
)
from mergegate.drafter.pipeline import wall_clock
from mergegate.errors import UsageError
from mergegate.records import catalog
from mergegate.records.policy import Policy, parse
from tests.helpers import commit, gate, init_repo

MOUNTS = Mounts(repo="/h/repo", job="/h/job", agent="/h/agent.py", out="/h/result.json", relay_socket="/h/r.sock")


def test_container_options_hold_every_sandbox_rule() -> None:
    limits = Limits(mem_bytes=512 * 2**20, cpus=1.5, pids=64, nofile=128, fsize_bytes=2**20, wall_clock_s=30)
    opts = container_options("img:tag", MOUNTS, limits, 1234.9)
    assert opts["image"] == "img:tag"
    assert opts["network_mode"] == "none"
    assert opts["read_only"] is True
    assert opts["cap_drop"] == ["ALL"]
    assert opts["security_opt"][0] == "no-new-privileges"
    assert opts["security_opt"][1] == f"seccomp={seccomp_profile()}" and len(opts["security_opt"]) == 2
    assert "runtime" not in opts
    assert container_options("i", MOUNTS, limits, 0, runtime="runsc")["runtime"] == "runsc"
    assert opts["user"] == f"{SANDBOX_UID}:{SANDBOX_UID}" and SANDBOX_UID != 0
    assert opts["mem_limit"] == opts["memswap_limit"] == 512 * 2**20
    assert opts["nano_cpus"] == 1_500_000_000
    assert opts["pids_limit"] == 64
    assert {(u["Name"], u["Soft"], u["Hard"]) for u in opts["ulimits"]} == {("nofile", 128, 128),
                                                                            ("fsize", 2**20, 2**20)}
    assert opts["init"] is True
    assert opts["log_config"]["Config"] == {"max-size": "1m", "max-file": "1"}
    assert opts["tmpfs"]["/tmp"].startswith("rw,noexec,nosuid,nodev,size=")
    staging = opts["tmpfs"]["/staging"].split(",")  # scratch space: bounded in bytes and in files
    assert {"rw", "noexec", "nosuid", "nodev", f"size={Limits().staging_bytes}", "nr_inodes=256",
            f"uid={SANDBOX_UID}"} <= set(staging)
    assert opts["environment"]["HOME"].startswith("/tmp/")
    assert opts["environment"]["HYPOTHESIS_STORAGE_DIRECTORY"].startswith("/tmp/")
    assert opts["labels"] == {LABEL: "1", LABEL_DEADLINE: "1234"}
    assert opts["use_config_proxy"] is False
    assert "pull" not in opts
    mounts = {m["Target"]: (m["Source"], m["ReadOnly"]) for m in opts["mounts"]}
    assert mounts == {
        "/repo": ("/h/repo", True), "/job": ("/h/job", True), "/opt/gate/agent.py": ("/h/agent.py", True),
        "/out/result.json": ("/h/result.json", False), "/relay/model.sock": ("/h/r.sock", True),
    }
    writable = [t for t, (_, ro) in mounts.items() if not ro]
    assert writable == ["/out/result.json"]  # one file: nothing can be created next to it on the host
    assert not any(k for k in opts["environment"] if "KEY" in k or "TOKEN" in k)


def test_our_seccomp_profile_denies_the_kernel_surface_a_test_never_needs() -> None:
    profile = json.loads(seccomp_profile())
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
    must = {"io_uring_setup", "io_uring_enter", "io_uring_register", "ptrace", "process_vm_readv", "keyctl",
            "add_key", "request_key", "bpf", "userfaultfd", "perf_event_open", "kexec_load", "kexec_file_load",
            "mount", "unshare", "setns", "pivot_root", "init_module", "open_by_handle_at"}
    assert must <= denied_syscalls()
    # Every ABI of the host: a 32-bit call cannot slip past a rule written for the 64-bit one.
    assert {a["architecture"]: a["subArchitectures"] for a in profile["archMap"]}["SCMP_ARCH_X86_64"] == [
        "SCMP_ARCH_X86", "SCMP_ARCH_X32"]
    newuser = [r for r in profile["syscalls"] if r["names"] == ["clone"] and r["args"][0]["value"] == 0x10000000]
    assert newuser and newuser[0]["action"] == "SCMP_ACT_ERRNO"


def test_runtime_and_image_requirements_are_read_from_gate_yaml() -> None:
    policy = parse("version: 1\ndrafter:\n  runtime: runsc\n  image_requirements: [\"attrs>=23\", \"idna\"]\n")
    assert policy.drafter.runtime == "runsc" and policy.drafter.image_requirements == ("attrs>=23", "idna")
    for bad, words in (("runtime: '../x'", "not a runtime name"),
                       ("image_requirements: ['--index-url=x']", "requirement"),
                       ("image_requirements: attrs", "a list")):
        with pytest.raises(UsageError, match=words):
            parse(f"version: 1\ndrafter:\n  {bad}\n")


def test_uid_mapping_is_read_from_uid_map() -> None:
    assert doctor.uid_mapping("0 0 4294967295", 10001).startswith("none (no user namespace")
    assert doctor.uid_mapping("0 100000 65536", 10001).startswith("remapped (container uid 0 is host uid 100000")


def test_no_relay_mount_without_a_model() -> None:
    opts = container_options("i", Mounts("/r", "/j", "/a", "/o"), Limits(), 0)
    assert all(not m["Target"].startswith("/relay") for m in opts["mounts"])


def test_wall_clock_grows_with_jobs_and_is_capped() -> None:
    assert wall_clock(1, 60, 20) < wall_clock(2, 60, 20) <= 3600
    assert wall_clock(10_000, 60, 20) == 3600


SOURCES = [
    ("Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\n"
     "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n",
     "http://mirror.example/debian"),
    ("deb [arch=amd64] http://old.example/debian bookworm main\n", "http://old.example/debian"),
    ("# deb http://x/debian bookworm main\ndeb http://y/debian bullseye main\n", None),
    ("Types: deb-src\nURIs: http://src.example/debian\nSuites: bookworm\n", None),
]


@pytest.mark.parametrize(("text", "mirror"), SOURCES)
def test_mirror_is_read_from_apt_sources(text: str, mirror: str | None) -> None:
    assert image.mirror_from_sources([text]) == mirror


REPO = Path(__file__).resolve().parent.parent


def test_sandbox_user_is_not_root_and_lives_in_tmpfs() -> None:
    text = image.dockerfile()
    assert f"ARG SANDBOX_UID={SANDBOX_UID}\n" in text and "USER ${SANDBOX_UID}:${SANDBOX_UID}\n" in text
    assert ':/tmp/home:/usr/sbin/nologin" >> /etc/passwd' in text
    assert text.rstrip().splitlines()[-1] == f"LABEL {image.FORMAT_LABEL}={image.FORMAT}"


def test_the_package_ships_the_sandbox_folder_itself() -> None:
    """One definition of the image: ``sandbox/`` at the top, read by the installed package."""
    assert image.dockerfile() == (REPO / "sandbox" / "Dockerfile").read_text()
    from mergegate.drafter import options

    assert json.loads(options.seccomp_profile()) == json.loads((REPO / "sandbox" / "seccomp.json").read_text())


# ---------------------------------------------------------------- surface

CODE = '''
"""A module."""
import os
__all__ = ["add", "Point", "hidden_but_listed"]

def add(a: int, b: int = 0) -> int:
    """Add two numbers."""
    return a + b

def not_exported(x): return x
def _private(x): return x

class Point(Base):
    """A point."""

async def hidden_but_listed(*args, **kw): ...
'''


def test_surface_reads_public_api_with_signatures_and_docstrings() -> None:
    apis = surface.parse_module("src/pkg/mod.py", CODE)
    assert [(a.target, a.kind) for a in apis] == [("pkg.mod.add", "function"), ("pkg.mod.Point", "class"),
                                                  ("pkg.mod.hidden_but_listed", "function")]
    add = apis[0]
    assert add.signature == "def add(a: int, b: int=0) -> int" and add.doc == "Add two numbers."
    assert apis[1].signature == "class Point(Base)"
    assert apis[2].signature.startswith("async def hidden_but_listed(*args, **kw)")
    assert "return a + b" in add.source


@pytest.mark.parametrize(("path", "module"), [
    ("src/pkg/mod.py", "pkg.mod"), ("src/pkg/__init__.py", "pkg"), ("lib/tool.py", "lib.tool"),
    ("src/my-pkg/x.py", None), ("src/a.txt", None), ("setup.py", "setup"),
])
def test_module_names(path: str, module: str | None) -> None:
    assert surface.module_name(path) == module


def test_unparseable_or_hostile_source_has_no_surface() -> None:
    assert surface.parse_module("src/bad.py", "def (:\n") == []
    assert surface.parse_module("src/deep.py", "x = " + "(" * 100_000 + ")" * 100_000) == []


def test_surface_only_reads_production_paths() -> None:
    files = {"src/a.py": b"def f(): pass\n", "oracles/properties/test_a.py": b"def test_x(): pass\n",
             "tools/b.py": b"def g(): pass\n"}
    assert [a.target for a in surface.surface(files, Policy())] == ["a.f"]


def test_select_by_module_function_or_path_and_max() -> None:
    apis = surface.surface({"src/a.py": b"def f(): pass\ndef g(): pass\n", "src/b/c.py": b"def h(): pass\n"},
                           Policy())
    assert [a.target for a in surface.select(apis, ["a.g"], 10)] == ["a.g"]
    assert [a.target for a in surface.select(apis, ["a"], 10)] == ["a.f", "a.g"]
    assert [a.target for a in surface.select(apis, ["src/b"], 10)] == ["b.c.h"]
    assert [a.target for a in surface.select(apis, ["b"], 10)] == ["b.c.h"]
    assert len(surface.select(apis, [], 2)) == 2
    with pytest.raises(UsageError, match="--target nope"):
        surface.select(apis, ["nope"], 10)


# ---------------------------------------------------------------- host-side validation

GOOD = b"from hypothesis import given, strategies as st\n\n@given(st.integers())\ndef test_x(a):\n    assert a == a\n"


def test_check_code_limits_the_number_and_length_of_tests() -> None:
    many = "".join(f"def test_{i}():\n    assert True\n" for i in range(stage.MAX_TESTS + 1)).encode()
    assert "over the limit of 20" in (stage.check_code(many) or "")
    long = f"def test_{'x' * 300}():\n    assert True\n".encode()
    assert "over the limit of 80" in (stage.check_code(long) or "")
    twice = b"def test_a():\n    assert True\n\n\ndef test_a():\n    assert False\n"
    assert "twice" in (stage.check_code(twice) or "")


@pytest.mark.parametrize(("code", "words"), [
    (GOOD, None),
    (b"", "empty draft"),
    (b"def test_x(:\n", "does not parse"),
    (b"\xff\xfe", "does not parse"),
    (b"x = 1\n", "no top-level test_"),
    (GOOD.replace(b"st.integers()", b"st.nothing()"), "st.nothing() at line 3"),
    (GOOD.replace(b"st.integers()", b"st . nothing ()"), "st.nothing()"),
    (b"from hypothesis.strategies import nothing\n@given(nothing())\ndef test_y(a): pass\n", "st.nothing()"),
    (b"def test_x(): pass\n" + b"#" * stage.MAX_CANDIDATE_BYTES, "byte cap"),
])
def test_check_code(code: bytes, words: str | None) -> None:
    reason = stage.check_code(code)
    assert (reason is None) if words is None else (reason is not None and words in reason)


def test_collect_takes_only_the_drafts_the_host_asked_for() -> None:
    results = {"drafts": {
        "c000": {"status": "drafted", "code": GOOD.decode()},
        "c001": {"status": "drafted", "code": 42},
        "c002": {"status": "drafted", "code": "def test_x(): pass\n\ud800"},  # not UTF-8 once encoded
        "c003": {"status": "drafted", "code": GOOD.decode().replace("st.integers()", "st.nothing()")},
        "c004": {"status": "error", "reason": "ImportError: no module x"},
        "c999": {"status": "drafted", "code": GOOD.decode()},  # never issued: ignored
    }}
    drafted, rejected = stage.collect(results, [f"c00{i}" for i in range(6)])
    assert [(d.key, d.code) for d in drafted] == [("c000", GOOD)]
    assert drafted[0].id == __import__("hashlib").sha256(GOOD).hexdigest()
    reasons = dict((r.key, r.reason) for r in rejected)
    assert set(reasons) == {"c001", "c002", "c003", "c004", "c005"}
    assert "st.nothing()" in reasons["c003"] and "ImportError" in reasons["c004"]
    assert "does not parse" in reasons["c002"] and "no draft" in reasons["c005"]


def test_the_result_file_is_read_only_as_a_capped_regular_file(tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.json"
    secret.write_text(json.dumps({"drafts": {}}))
    os.symlink(secret, tmp_path / "link.json")  # never followed
    os.mkfifo(tmp_path / "fifo.json")  # would block a naive reader
    (tmp_path / "big.json").write_bytes(b" " * (stage.MAX_RESULTS_BYTES + 1))
    (tmp_path / "list.json").write_text("[]")
    for name in ("link.json", "fifo.json", "big.json", "list.json", "absent.json"):
        assert stage.read_results(tmp_path / name) == {}
    assert stage.read_results(secret) == {"drafts": {}}


def test_a_forged_triage_record_is_sanitised() -> None:
    assert stage.parse_triage({"result": "admit"}).result == "not_run"
    got = stage.parse_triage({"result": "fail", "witness": "w" * 10_000, "tests": {"t": "fail"}, "elapsed_s": "x"})
    assert got.result == "fail" and len(got.witness) == stage.MAX_WITNESS and got.elapsed_s == 0.0


# ---------------------------------------------------------------- install helpers

def test_oracle_dir_is_the_literal_directory_of_the_first_oracle_glob() -> None:
    assert accept.oracle_dir(Policy()) == "oracles/properties"
    pol = parse("version: 1\npaths:\n  oracle: ['checks/prop_*.py']\n")
    assert accept.oracle_dir(pol) == "checks"
    with pytest.raises(UsageError):
        accept.oracle_dir(parse("version: 1\npaths:\n  oracle: ['*.py']\n"))


def test_entry_text_loads_as_a_catalog_entry_even_with_awkward_text() -> None:
    text = accept.entry_text("add-1234", "oracles/properties/t.py::test_add", 'claim: "quoted" # and: colons',
                             ["src/a b.py"])
    prop = catalog.parse_entry(text, "x.yaml")
    assert (prop.id, prop.oracle_function, prop.claim, prop.covers) == (
        "add-1234", "test_add", 'claim: "quoted" # and: colons', ("src/a b.py",))
    assert not prop.canary and not prop.quarantine_eligible


def test_claimed_text_appends_and_keeps_comments() -> None:
    out = accept.claimed_text(b"# why\nclaimed: [a]\n", ["b", "a"], "claimed.yaml")
    assert out.startswith(b"# why\n") and catalog.parse_claimed(out, "c") == ("a", "b")


def test_test_functions_in_file_order() -> None:
    code = b"def helper(): pass\ndef test_b(): pass\nclass TestX: pass\ndef test_a(): pass\n"
    assert accept.test_functions(code) == ["test_b", "test_a"]
    assert accept.slug("pkg.Mod.func") == "pkg_mod_func"


def test_the_sandbox_user_is_never_root() -> None:
    from mergegate.drafter.options import sandbox_uid

    assert sandbox_uid(0) == SANDBOX_UID and sandbox_uid(1000) == 1000
    assert container_options("i", MOUNTS, Limits(), 0, uid=1000)["user"] == "1000:1000"
    with pytest.raises(ValueError):
        container_options("i", MOUNTS, Limits(), 0, uid=0)


def test_dead_engine_is_one_clear_line(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    commit(repo, {"src/calc.py": "def add(a: int, b: int) -> int:\n    return a + b\n"})
    env = {"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}
    for args in (["draft-props"], ["sandbox", "doctor"], ["sandbox", "build"]):
        proc = gate(repo, *args, env=env, check=2)
        assert proc.stderr.count("\n") == 1 and "no Docker engine answers" in proc.stderr, proc.stderr
