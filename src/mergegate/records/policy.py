"""``gate.yaml``: schema, defaults, validation, and the pure path classifier."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mergegate.errors import ConfigError
from mergegate.records import yamlio
from mergegate.records.policy_schema import Agents, Budget, Canaries, Coverage, Drafter, Paths, Runner, Server, Verdict
from mergegate.rules import globs, pathclass
from mergegate.rules.pathclass import (
    CATALOG,
    CLASSES,
    FIXTURE,
    GUARDED,
    LEDGER,
    MANIFEST,
    ORACLE,
    OTHER,
    POLICY,
    PRODUCTION,
    SIGNED,
)

POLICY_FILE = "gate.yaml"

__all__ = [
    "CATALOG",
    "CLASSES",
    "FIXTURE",
    "GUARDED",
    "LEDGER",
    "MANIFEST",
    "ORACLE",
    "OTHER",
    "POLICY",
    "PRODUCTION",
    "SIGNED",
    "Agents",
    "Budget",
    "Canaries",
    "Coverage",
    "Drafter",
    "Paths",
    "Policy",
    "Runner",
    "Server",
    "Verdict",
    "classify",
    "parse",
]


@dataclass(frozen=True)
class Policy:
    version: int = 1
    paths: Paths = field(default_factory=Paths)
    agents: Agents = field(default_factory=Agents)
    verdict: Verdict = field(default_factory=Verdict)
    budget: Budget = field(default_factory=Budget)
    canaries: Canaries = field(default_factory=Canaries)
    runner: Runner = field(default_factory=Runner)
    server: Server = field(default_factory=Server)
    drafter: Drafter = field(default_factory=Drafter)
    coverage: Coverage = field(default_factory=Coverage)
    source: str = POLICY_FILE

    def classify(self, path: str) -> str:
        """The class of one repository-relative path; guarded classes win over production."""
        return classify(self.paths, path)

    def is_guarded(self, path: str) -> bool:
        return self.classify(path) in GUARDED

    def is_agent_author(self, email: str) -> bool:
        return bool(email) and globs.globs_match_any(email, self.agents.authors)


def classify(paths: Paths, path: str) -> str:
    """Pure classifier.  Order matters: a path matching a guarded class is guarded."""
    return pathclass.classify(
        path, production=paths.production, oracle=paths.oracle, fixtures=paths.fixtures,
        catalog=paths.catalog, manifest=paths.manifest, ledger=paths.ledger, policy=paths.policy,
    )


# ---------------------------------------------------------------- loading

_TOP = ("version", "paths", "agents", "verdict", "budget", "canaries", "runner", "server", "drafter", "coverage")


def parse(text: str | bytes, source: str = POLICY_FILE) -> Policy:
    """Validate a gate.yaml text into a Policy; any problem is a ConfigError."""
    doc = yamlio.load(text, source)
    if doc.data is None:
        raise ConfigError(source, 1, "the policy is empty", "run `gate init` or copy the example")
    top = yamlio.check_keys(doc, (), doc.data, _TOP, required=("version",))
    if type(top["version"]) is not int or top["version"] != 1:  # `version: true` is not 1
        raise doc.error(("version",), f"unsupported version {top['version']!r}", "write version: 1")
    return Policy(
        version=1,
        paths=_paths(doc, top.get("paths")),
        agents=_agents(doc, top.get("agents")),
        verdict=_verdict(doc, top.get("verdict")),
        budget=_section(doc, "budget", top.get("budget"), Budget, int, "a whole number"),
        canaries=_canaries(doc, top.get("canaries")),
        runner=_runner(doc, top.get("runner")),
        server=_server(doc, top.get("server")),
        drafter=_drafter(doc, top.get("drafter")),
        coverage=_coverage(doc, top.get("coverage")),
        source=source,
    )


def _fields(cls: type) -> tuple[str, ...]:
    import dataclasses

    return tuple(f.name for f in dataclasses.fields(cls))


def _section(doc: yamlio.Doc, name: str, raw: Any, cls: type, kind: type, hint: str) -> Any:
    if raw is None:
        return cls()
    values = yamlio.check_keys(doc, (name,), raw, _fields(cls))
    for key, value in values.items():
        yamlio.expect(doc, (name, key), value, kind, hint)
        if kind is int and value < 0:
            raise doc.error((name, key), f"{name}.{key} must not be negative", "write 0 or more")
    return cls(**values)


def _paths(doc: yamlio.Doc, raw: Any) -> Paths:
    if raw is None:
        return Paths()
    values = dict(yamlio.check_keys(doc, ("paths",), raw, _fields(Paths)))
    for key in ("production", "oracle", "fixtures", "policy"):
        if key in values:
            values[key] = yamlio.str_list(doc, ("paths", key), values[key])
            for i, pattern in enumerate(values[key]):
                if not globs.is_valid(pattern):
                    raise doc.error(("paths", key, i), f"bad glob {pattern!r}", "fix the pattern")
    for key in ("catalog", "manifest", "ledger"):
        if key in values:
            value = yamlio.expect(doc, ("paths", key), values[key], str, "a path")
            if not value.strip("/") or value.startswith("/") or ".." in value.split("/"):
                raise doc.error(
                    ("paths", key), f"paths.{key} must be a relative path inside the repository",
                    "write a path such as oracles/catalog",
                )
            values[key] = value.strip("/")
    paths = Paths(**values)
    if paths.manifest == paths.ledger:
        raise doc.error(("paths",), "manifest and ledger are the same file", "give each its own path")
    return paths


def _agents(doc: yamlio.Doc, raw: Any) -> Agents:
    if raw is None:
        return Agents()
    values = dict(yamlio.check_keys(doc, ("agents",), raw, _fields(Agents)))
    for key in ("authors", "pushers"):
        if key in values:
            values[key] = yamlio.str_list(doc, ("agents", key), values[key] or [])
    if "env" in values:
        env = yamlio.expect(doc, ("agents", "env"), values["env"], str, "a variable name")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", env):
            raise doc.error(("agents", "env"), f"{env!r} is not a variable name", "write e.g. GATE_AGENT")
    return Agents(**values)


def _verdict(doc: yamlio.Doc, raw: Any) -> Verdict:
    if raw is None:
        return Verdict()
    values = dict(yamlio.check_keys(doc, ("verdict",), raw, _fields(Verdict)))
    if "combiner" in values and values["combiner"] not in ("strict", "lenient"):
        raise doc.error(
            ("verdict", "combiner"), f"unknown combiner {values['combiner']!r}", "write strict or lenient"
        )
    if "stale_base" in values and values["stale_base"] not in ("merge", "refuse"):
        raise doc.error(
            ("verdict", "stale_base"), f"unknown stale_base {values['stale_base']!r}", "write merge or refuse"
        )
    if "seeds" in values:
        seeds = yamlio.expect(doc, ("verdict", "seeds"), values["seeds"], list, "a list of integers")
        for i, seed in enumerate(seeds):
            yamlio.expect(doc, ("verdict", "seeds", i), seed, int, "an integer")
        if not seeds or len(set(seeds)) != len(seeds):
            raise doc.error(
                ("verdict", "seeds"), "seeds must be a non-empty list without repeats", "write e.g. [11, 29, 47]"
            )
        values["seeds"] = tuple(seeds)
    if "fresh_seeds" in values:
        count = yamlio.expect(doc, ("verdict", "fresh_seeds"), values["fresh_seeds"], int, "a whole number")
        if not 0 <= count <= MAX_FRESH_SEEDS:
            raise doc.error(("verdict", "fresh_seeds"), f"fresh_seeds must be between 0 and {MAX_FRESH_SEEDS}",
                            "write e.g. fresh_seeds: 1 (0 turns fresh seeds off)")
    return Verdict(**values)


MAX_FRESH_SEEDS = 16


def _coverage(doc: yamlio.Doc, raw: Any) -> Coverage:
    if raw is None:
        return Coverage()
    values = dict(yamlio.check_keys(doc, ("coverage",), raw, _fields(Coverage)))
    if "paths" in values:
        values["paths"] = yamlio.str_list(doc, ("coverage", "paths"), values["paths"])
        for i, pattern in enumerate(values["paths"]):
            if not globs.is_valid(pattern):
                raise doc.error(("coverage", "paths", i), f"bad glob {pattern!r}", "fix the pattern")
    if "threshold" in values:
        t = yamlio.expect(doc, ("coverage", "threshold"), values["threshold"], (int, float), "a fraction")
        if not 0 <= t <= 1:
            raise doc.error(("coverage", "threshold"), "threshold must be between 0 and 1",
                            "write e.g. threshold: 1.0 (every changed line reached) or 0.8")
        values["threshold"] = float(t)
    if "action" in values and values["action"] not in ("review", "admit"):
        raise doc.error(("coverage", "action"), f"bad action {values['action']!r}", "write one of: review, admit")
    return Coverage(**values)


def _canaries(doc: yamlio.Doc, raw: Any) -> Canaries:
    if raw is None:
        return Canaries()
    values = dict(yamlio.check_keys(doc, ("canaries",), raw, _fields(Canaries)))
    markers = yamlio.str_list(doc, ("canaries", "secret_markers"), values.get("secret_markers", []))
    for i, marker in enumerate(markers):
        try:
            re.compile(marker)
        except re.error as exc:
            raise doc.error(
                ("canaries", "secret_markers", i), f"bad regular expression {marker!r}: {exc}",
                "fix the pattern",
            ) from None
    return Canaries(secret_markers=markers)


def _runner(doc: yamlio.Doc, raw: Any) -> Runner:
    if raw is None:
        return Runner()
    values = dict(yamlio.check_keys(doc, ("runner",), raw, _fields(Runner)))
    if "timeout_s" in values:
        t = yamlio.expect(doc, ("runner", "timeout_s"), values["timeout_s"], (int, float), "seconds")
        if t <= 0:
            raise doc.error(("runner", "timeout_s"), "timeout_s must be positive", "write e.g. 120")
        values["timeout_s"] = float(t)
    if "jobs" in values:
        yamlio.expect(doc, ("runner", "jobs"), values["jobs"], int, "a whole number")
    for key, choices in (("containment", ("auto", "bwrap", "none")), ("unsealed_pass", ("review", "admit"))):
        if key in values and values[key] not in choices:
            raise doc.error(("runner", key), f"bad {key} {values[key]!r}", f"write one of: {', '.join(choices)}")
    for key in ("memory_mb", "max_processes"):
        if key in values:
            value = yamlio.expect(doc, ("runner", key), values[key], int, "a positive whole number")
            if value <= 0:
                raise doc.error(("runner", key), f"{key} must be positive", "write e.g. 8192 or 256")
    return Runner(**values)


def _server(doc: yamlio.Doc, raw: Any) -> Server:
    if raw is None:
        return Server()
    values = dict(yamlio.check_keys(doc, ("server",), raw, _fields(Server)))
    if "require_signed_oracle_commits" in values:
        yamlio.expect(
            doc, ("server", "require_signed_oracle_commits"),
            values["require_signed_oracle_commits"], bool, "true or false",
        )
    if "protected_branches" in values:
        yamlio.expect(doc, ("server", "protected_branches"), values["protected_branches"], bool,
                      "true or false")
    if values.get("allowed_signers") is not None:
        yamlio.expect(doc, ("server", "allowed_signers"), values["allowed_signers"], str, "a path")
    if "protected_refs" in values:
        refs = yamlio.str_list(doc, ("server", "protected_refs"), values["protected_refs"] or [])
        for i, pattern in enumerate(refs):
            if not pattern.startswith("refs/") or not globs.is_valid(pattern):
                raise doc.error(("server", "protected_refs", i), f"{pattern!r} is not a ref pattern",
                                "write full ref names or globs, e.g. refs/heads/release/*")
        values["protected_refs"] = refs
    if "agent_force_push" in values and values["agent_force_push"] not in ("refuse", "allow"):
        raise doc.error(("server", "agent_force_push"), "must be refuse or allow", "write refuse")
    return Server(**values)


def _drafter(doc: yamlio.Doc, raw: Any) -> Drafter:
    if raw is None:
        return Drafter()
    values = dict(yamlio.check_keys(doc, ("drafter",), raw, _fields(Drafter)))
    for key in ("backend", "image", "api_key_env"):
        if key in values:
            yamlio.expect(doc, ("drafter", key), values[key], str, "a string")
    for key in ("base_url", "model"):
        if values.get(key) is not None:
            yamlio.expect(doc, ("drafter", key), values[key], str, "a string")
    for key in ("timeout_s", "max_candidates"):
        if key in values:
            v = yamlio.expect(doc, ("drafter", key), values[key], (int, float), "a positive number")
            if v <= 0:
                raise doc.error(("drafter", key), f"{key} must be positive", "write a positive number")
    if "max_candidates" in values:
        yamlio.expect(doc, ("drafter", "max_candidates"), values["max_candidates"], int, "a whole number")
    if values.get("runtime") is not None:
        runtime = yamlio.expect(doc, ("drafter", "runtime"), values["runtime"], str, "a runtime name")
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", runtime):
            raise doc.error(("drafter", "runtime"), f"{runtime!r} is not a runtime name", "write e.g. runsc")
    if "image_requirements" in values:
        reqs = yamlio.expect(doc, ("drafter", "image_requirements"), values["image_requirements"], list,
                             "a list of requirement strings")
        if not all(isinstance(r, str) and r.strip() and not r.startswith("-") for r in reqs):
            raise doc.error(("drafter", "image_requirements"), "every entry must be a requirement like 'attrs>=23'",
                            "write e.g. image_requirements: [\"attrs>=23\"]")
        values["image_requirements"] = tuple(reqs)
    return Drafter(**values)


DEFAULT_TEXT = """\
# mergegate policy: which paths are the oracle, which are production.
# This file is itself guarded: change it only in an oracle-only commit.
version: 1
paths:
  production: ["src/**"]
  oracle: ["oracles/properties/**"]
  fixtures: ["oracles/fixtures/**"]
  catalog: oracles/catalog          # one YAML file per property, plus claimed.yaml
  manifest: oracles/MANIFEST.sha256
  ledger: freeze_ledger.yaml
  policy:                            # what configures the gate, runs it, or runs at Python start-up
    - gate.yaml
    - .pre-commit-config.yaml
    - conftest.py
    - pytest.ini
    - .ci/**
    # CI definitions: a patch that edits one replaces the job that judges it
    - .github/**
    - .gitlab-ci.yml
    - .gitlab/**
    - .circleci/**
    - .buildkite/**
    - Jenkinsfile
    - azure-pipelines.yml
    - .travis.yml
    - bitbucket-pipelines.yml
    - .woodpecker.yml
    - .woodpecker/**
    - .drone.yml
    # what CI calls to run the gate
    - noxfile.py
    - tox.ini
    - Makefile
    - makefile
    - GNUmakefile
    - justfile
    - Justfile
    - .justfile
    - Taskfile.yml
    # Python start-up hooks: imported by any interpreter with their folder on its path
    - sitecustomize.py
    - usercustomize.py
    - "*.pth"
    # how git itself reads the tree (diff=, -diff, filters): the gate reads the patch with git
    - .gitattributes
agents:                              # how an agent patch is recognised
  authors: ["*[bot]@*"]              # commit author e-mail globs
  pushers: []                        # server-side identities (GL_USERNAME, GITHUB_USER_LOGIN, ...)
  env: GATE_AGENT                    # set to 1 in an agent's environment for local hooks
verdict: {combiner: strict, seeds: [11, 29, 47]}
budget: {max_active: 3, max_added_per_patch: 0}
canaries: {secret_markers: ["-----BEGIN .*PRIVATE KEY-----", "AKIA[0-9A-Z]{16}"]}
"""
