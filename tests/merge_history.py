"""A merge-heavy history (about a quarter merges) as a ``git fast-import`` stream.

Shared by the pre-receive test and ``bench/pre_receive.py``.  Side branches hold
production commits and properly re-signed oracle-only commits and are merged back,
so a merge's first-parent diff often holds both kinds of path (what a whole real
history pushed at once looks like).  ``mix_rate`` adds commits that change an
oracle and a production file at once (correctly re-signed, so the only rule they
break is mixing); every merge only takes what its side brought.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

from mergegate.records import manifest, policy

Changes = dict[str, bytes | None]
LEDGER = b"version: 1\nbudget: {max_active: 3, max_added_per_patch: 0}\nentries: []\n"


@dataclass
class MergeHistory:
    seed: int = 11
    mix_rate: float = 0.0
    oracles: int = 300
    production: int = 1200
    rng: random.Random = field(init=False)
    out: list[bytes] = field(default_factory=list)
    mark: int = 0
    when: int = 1_700_000_000
    commits: int = 0
    counts: dict[str, int] = field(default_factory=lambda: {"merges": 0, "oracle-only": 0, "mixing": 0})
    prod: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def commit(self, ref: str, changes: Changes, parent: int | None, merge: int | None = None) -> int:
        self.mark += 1
        self.when += 60
        self.commits += 1
        ident = f"Dev <dev@example.com> {self.when} +0000\n".encode()
        msg = f"change {self.mark}".encode()
        self.out.append(b"commit %s\nmark :%d\nauthor %scommitter %sdata %d\n%s\n"
                        % (ref.encode(), self.mark, ident, ident, len(msg), msg))
        if parent is not None:
            self.out.append(b"from :%d\n" % parent)
        if merge is not None:
            self.out.append(b"merge :%d\n" % merge)
        for path, data in changes.items():
            if data is None:
                self.out.append(b"D %s\n" % path.encode())
            else:
                self.out.append(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data))
        self.out.append(b"\n")
        return self.mark

    def blob(self, path: str) -> bytes:
        return f"# {path}\nvalue = {self.rng.random()!r}\n".encode()

    def signed_change(self, signed: dict[str, bytes], n: int) -> Changes:
        """Change ``n`` oracle files in ``signed`` and re-sign: an oracle-only change."""
        changes: Changes = {}
        for path in self.rng.sample([p for p in signed if p != policy.POLICY_FILE], n):
            signed[path] = changes[path] = self.blob(path)
        rows = [manifest.Row(hashlib.sha256(d).hexdigest(), len(d), p) for p, d in signed.items()]
        changes[policy.Paths().manifest] = manifest.render(rows)
        return changes

    def prod_change(self) -> Changes:
        return {p: self.blob(p) for p in self.rng.sample(self.prod, self.rng.randint(1, 3))}

    def root(self, signed: dict[str, bytes]) -> Changes:
        changes: Changes = {policy.POLICY_FILE: policy.DEFAULT_TEXT.encode(), "freeze_ledger.yaml": LEDGER}
        signed[policy.POLICY_FILE] = policy.DEFAULT_TEXT.encode()
        for i in range(self.oracles):
            path = f"oracles/properties/test_p{i}.py" if i % 2 else f"oracles/fixtures/data/f{i}.json"
            signed[path] = changes[path] = self.blob(path)
        for i in range(self.production):
            path = f"src/pkg{i // 30}/mod{i % 30}.py"
            self.prod.append(path)
            changes[path] = self.blob(path)
        rows = [manifest.Row(hashlib.sha256(d).hexdigest(), len(d), p) for p, d in signed.items()]
        changes[policy.Paths().manifest] = manifest.render(rows)
        return changes

    def one(self, signed: dict[str, bytes], oracle_rate: float) -> Changes:
        """An ordinary commit: production, oracle-only, or (at ``mix_rate``) both at once."""
        roll = self.rng.random()
        if roll < self.mix_rate:
            self.counts["mixing"] += 1
            return {**self.prod_change(), **self.signed_change(signed, 1)}
        if roll < self.mix_rate + oracle_rate:
            self.counts["oracle-only"] += 1
            return self.signed_change(signed, self.rng.randint(1, 2))
        return self.prod_change()

    def side_episode(self, main: int, signed: dict[str, bytes], number: int) -> tuple[int, dict[str, bytes]]:
        """A side branch of one or two commits (main moving on meanwhile), merged back."""
        side_signed = dict(signed)
        side, brought = main, {}
        for i in range(self.rng.randint(1, 2)):
            if self.rng.random() < 0.35:
                changes = self.one(side_signed, oracle_rate=0.6)
            else:
                changes = {f"src/side{number}/m{i}.py": self.blob(f"side{number}/{i}")}
            brought.update(changes)
            side = self.commit("refs/heads/side", changes, side)
            if self.rng.random() < 0.5:  # main moves on with production only: no oracle conflict
                main = self.commit("refs/heads/main", self.prod_change(), main)
        self.counts["merges"] += 1
        return self.commit("refs/heads/main", brought, main, merge=side), side_signed


def build(total: int, seed: int = 11, mix_rate: float = 0.0, oracles: int = 300, production: int = 1200
          ) -> tuple[bytes, MergeHistory]:
    """The fast-import stream of a ``total``-commit history on refs/heads/main, and its maker."""
    h = MergeHistory(seed, mix_rate, oracles, production)
    signed: dict[str, bytes] = {}
    main = h.commit("refs/heads/main", h.root(signed), None)
    number = 0
    while h.commits < total:
        if h.rng.random() < 0.7:
            number += 1
            main, signed = h.side_episode(main, signed, number)
        else:
            main = h.commit("refs/heads/main", h.one(signed, oracle_rate=0.05), main)
    h.out.append(b"reset refs/heads/side\nfrom 0000000000000000000000000000000000000000\n\n")
    return b"".join(h.out), h
