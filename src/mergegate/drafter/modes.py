"""Which of Hypothesis's ghostwriters to ask for, from the names of a module's public functions.

A bare ``magic(f)`` on most functions writes a fuzz test that only calls ``f``: it asserts
nothing and is not worth a person's time.  Relations are: a round trip where the module
offers a pair (encode/decode, dumps/loads, to_x/from_x, a_to_b/b_to_a), idempotence where
the name says so (normalize, sort, dedupe ...), equivalence for one name in two modules.
``magic`` stays for the rest: it writes binary-operation laws for ``add(a, b)``-like
functions, and a fuzz test the host then refuses.  Pure: names in, plans out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from mergegate.drafter.surface import Api

INVERSES = (("encode", "decode"), ("dumps", "loads"), ("dump", "load"), ("serialize", "deserialize"),
            ("serialise", "deserialise"), ("compress", "decompress"), ("encrypt", "decrypt"), ("pack", "unpack"),
            ("quote", "unquote"), ("escape", "unescape"), ("marshal", "unmarshal"), ("format", "parse"),
            ("to_", "from_"), ("wrap", "unwrap"), ("encode", "parse"), ("render", "parse"))
IDEMPOTENT = re.compile(r"(normali[sz]e|canonicali[sz]e|canonical|saniti[sz]e|strip|dedent|clean|sort|sorted|unique|"
                        r"dedupe|simplify|flatten|lower|upper|casefold|slugify|squash|collapse|trim|absolute|abs)"
                        r"(_(?!key$|lt$|eq$|ne$|le$|ge$|gt$)[a-z0-9_]*)?")


@dataclass(frozen=True)
class Plan:
    """One ghostwriter call: its mode and the APIs it takes, in order."""

    mode: str  # roundtrip | idempotent | equivalent | magic
    apis: tuple[Api, ...]

    @property
    def target(self) -> str:
        return "+".join(a.target for a in self.apis)

    @property
    def call(self) -> str:
        return f"ghostwriter.{self.mode}({', '.join(a.target for a in self.apis)})"


def inverse_of(name: str, names: set[str]) -> str | None:
    """The name in ``names`` that undoes ``name`` (``encode`` -> ``decode``, ``a_to_b`` -> ``b_to_a``)."""
    for forward, backward in INVERSES:
        if forward in name:
            other = name.replace(forward, backward, 1)
            if other != name and other in names:
                return other
    match = re.fullmatch(r"(.+)_to_(.+)", name)
    if match and f"{match.group(2)}_to_{match.group(1)}" in names:
        return f"{match.group(2)}_to_{match.group(1)}"
    return None


def plan(apis: Sequence[Api]) -> list[Plan]:
    """One plan per function (pairs once, as a round trip), in the order of ``apis``."""
    functions = [a for a in apis if a.kind == "function"]
    by_module: dict[str, dict[str, Api]] = {}
    for api in functions:
        by_module.setdefault(api.module, {})[api.qualname] = api
    by_name: dict[str, list[Api]] = {}
    for api in functions:
        by_name.setdefault(api.qualname, []).append(api)
    plans: list[Plan] = []
    used: set[str] = set()
    for api in apis:
        if api.target in used:
            continue
        used.add(api.target)
        if api.kind != "function":
            plans.append(Plan("magic", (api,)))
            continue
        siblings = by_module[api.module]
        other = inverse_of(api.qualname, set(siblings))
        twins = [t for t in by_name[api.qualname] if t.target not in used]
        if other is not None and siblings[other].target not in used:
            used.add(siblings[other].target)
            plans.append(Plan("roundtrip", (api, siblings[other])))
        elif twins:
            used.add(twins[0].target)
            plans.append(Plan("equivalent", (api, twins[0])))
        elif IDEMPOTENT.fullmatch(api.qualname.lower()):
            plans.append(Plan("idempotent", (api,)))
        else:
            plans.append(Plan("magic", (api,)))
    return plans
