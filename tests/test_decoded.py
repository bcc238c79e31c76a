"""``trusted/decoded.py`` reads a code object's instructions as ``dis.get_instructions`` does, field for field.

The site tables (``callsite``, ``chains``, ``iterated``, ``compared``, ``lengths``, ``consumers``) decide what is
fused from these instructions: a field that differed from ``dis``'s would fuse what must not be.  Compared on every
code object (functions, classes, comprehensions, nested to any depth) of real modules and of test files as pytest
rewrites them, on whichever Python runs the suite.
"""

from __future__ import annotations

import ast
import dis
import importlib.util
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _pytest.assertion import rewrite

from mergegate.runner.trusted import callsite, decoded

FIELDS = ("opname", "opcode", "arg", "argval", "offset", "is_jump_target")
MODULES = ("asyncio.base_events", "dataclasses", "email._header_value_parser", "json.decoder", "typing", "dis",
           "_pytest.assertion.rewrite", "hypothesis.stateful", "hypothesis.strategies._internal.core")
HERE = Path(__file__).parent


def codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from codes(const)


def module_code(name: str) -> types.CodeType:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None
    return compile(Path(spec.origin).read_text(encoding="utf-8"), spec.origin, "exec")


def rewritten_code(path: Path) -> types.CodeType:
    """A test file as pytest runs it: its ``assert``s rewritten (the shapes ``callsite`` reads)."""
    source = path.read_bytes()
    tree = ast.parse(source)
    rewrite.rewrite_asserts(tree, source, str(path), None)
    return compile(tree, str(path), "exec")


def same(a: Any, b: Any) -> bool:
    return a is b or (type(a) is type(b) and a == b)


def assert_same_as_dis(top: types.CodeType) -> int:
    checked = 0
    for code in codes(top):
        want = [tuple(getattr(i, f) for f in FIELDS) for i in dis.get_instructions(code)
                if i.opname not in ("CACHE", "EXTENDED_ARG", "NOP")]
        got = [tuple(getattr(i, f) for f in FIELDS) for i in decoded.instructions(code)]
        assert len(got) == len(want), code
        for w, g in zip(want, got, strict=True):
            assert all(same(x, y) for x, y in zip(w, g, strict=True)), (code, w, g)
        checked += len(got)
    return checked


@pytest.mark.parametrize("name", MODULES)
def test_every_instruction_of_a_real_module_is_dis_s(name: str) -> None:
    assert assert_same_as_dis(module_code(name)) > 1000


@pytest.mark.parametrize("path", ["test_sealed_chains.py", "test_sealed_compared.py", "test_decoded.py"])
def test_every_instruction_of_a_rewritten_test_file_is_dis_s(path: str) -> None:
    assert assert_same_as_dis(rewritten_code(HERE / path)) > 500


def test_long_jumps_and_many_names_take_extended_args() -> None:
    """Arguments over 255 (``EXTENDED_ARG``): 300 names, a jump over a long body."""
    body = "\n".join(f"        v{i} = n{i}" for i in range(300))
    source = f"def f(x):\n    while x:\n{body}\n        x -= 1\n    return x\n"
    code = compile(source, "<generated>", "exec")
    assert any(i.opname == "EXTENDED_ARG" for c in codes(code) for i in dis.get_instructions(c))
    assert assert_same_as_dis(code) > 600


def test_a_code_object_it_cannot_read_falls_back_to_dis(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(code: types.CodeType) -> list[decoded.Instruction]:
        raise IndexError("a shape this reader does not know")

    monkeypatch.setattr(decoded, "_decode", broken)
    assert assert_same_as_dis(module_code("json.decoder")) > 100


def test_each_code_object_is_read_once_for_every_site_table(monkeypatch: pytest.MonkeyPatch) -> None:
    code = compile("def f(m):\n    return m.g(1) == m.h(2)\n", "<generated>", "exec").co_consts[0]
    reads: list[types.CodeType] = []
    real = decoded.instructions
    monkeypatch.setattr(decoded, "instructions", lambda c: reads.append(c) or real(c))
    first = callsite.instructions(code)
    assert callsite.instructions(code) is first and reads == [code]
