"""The sections of ``gate.yaml`` as frozen dataclasses with their defaults (``policy.py`` reads them)."""

from __future__ import annotations

from dataclasses import dataclass

from mergegate.rules import pathclass


@dataclass(frozen=True)
class Paths:
    production: tuple[str, ...] = ("src/**",)
    oracle: tuple[str, ...] = ("oracles/properties/**",)
    fixtures: tuple[str, ...] = ("oracles/fixtures/**",)
    catalog: str = "oracles/catalog"
    manifest: str = "oracles/MANIFEST.sha256"
    ledger: str = "freeze_ledger.yaml"
    policy: tuple[str, ...] = pathclass.DEFAULT_POLICY


@dataclass(frozen=True)
class Agents:
    authors: tuple[str, ...] = ("*[bot]@*",)
    pushers: tuple[str, ...] = ()
    env: str = "GATE_AGENT"


@dataclass(frozen=True)
class Verdict:
    combiner: str = "strict"
    seeds: tuple[int, ...] = (11, 29, 47)
    stale_base: str = "merge"  # merge | refuse: a head forked before the target's tip (gate check)
    fresh_seeds: int = 1  # seeds drawn from the OS by each gate check, run on both sides besides ``seeds``


@dataclass(frozen=True)
class Budget:
    max_active: int = 3
    max_added_per_patch: int = 0


@dataclass(frozen=True)
class Canaries:
    secret_markers: tuple[str, ...] = ("-----BEGIN .*PRIVATE KEY-----", "AKIA[0-9A-Z]{16}")


@dataclass(frozen=True)
class Coverage:
    """Change coverage: which changed production lines the head's runs executed."""

    paths: tuple[str, ...] = ()  # globs of the production files that count (default: paths.production)
    threshold: float = 1.0  # the fraction of changed executable lines that must be reached
    action: str = "review"  # review | admit: an admit whose change was not reached enough


@dataclass(frozen=True)
class Runner:
    timeout_s: float = 120.0
    jobs: int = 0  # 0: one worker per core
    containment: str = "auto"  # auto | bwrap | none: how a subject (production code) is contained
    memory_mb: int = 8192  # address-space limit of a subject process
    max_processes: int = 256  # processes a subject may run (where the kernel enforces it)
    unsealed_pass: str = "review"  # review | admit: an agent's admit resting on an isolation: shared pass


@dataclass(frozen=True)
class Server:
    require_signed_oracle_commits: bool = False
    allowed_signers: str | None = None  # path inside the repository, read from the trusted side
    agent_force_push: str = "refuse"  # refuse | allow
    # The host lets only people push to the default branch (agents open merge requests): one of the
    # ways, with agents.pushers and signed oracle commits, the server tells an agent from a person.
    protected_branches: bool = False
    # Refs (globs over full names) whose commits count as judged, besides the default branch: a
    # commit is judged when a protected ref first gains it, wherever else the server held it.
    protected_refs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Drafter:
    backend: str = "ghostwriter"
    image: str = "mergegate-sandbox:latest"
    base_url: str | None = None
    model: str | None = None
    api_key_env: str = "GATE_DRAFTER_API_KEY"
    timeout_s: float = 60.0
    max_candidates: int = 20
    runtime: str | None = None  # the engine's OCI runtime for the sandbox, e.g. runsc (gVisor)
    image_requirements: tuple[str, ...] = ()  # extra packages baked into the sandbox image at build time
