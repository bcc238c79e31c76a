"""The secret-marker scan is linear in the patch, and a patch over its cap is a miss with a reason."""

from __future__ import annotations

import re
import time

from mergegate.records.policy import Canaries
from mergegate.rules import admission, secretscan
from mergegate.rules.patchparse import parse_diff

MARKERS = Canaries().secret_markers
KEY = "-----BEGIN RSA PRIVATE KEY-----"


def _added(line: str, path: str = "src/blob.py") -> bytes:
    head = f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
    return f"{head}@@ -0,0 +1 @@\n+{line}\n".encode()


def test_a_1_1_mb_added_line_is_scanned_fast() -> None:
    line = "-----BEGIN " * 100_000  # 1.1 MB: quadratic for `-----BEGIN .*PRIVATE KEY-----` (44.8 s before)
    parsed = parse_diff(_added(line))
    started = time.monotonic()
    result = admission.canary_no_secret_marker(parsed, MARKERS)
    assert time.monotonic() - started < 5
    assert result.ok, result.detail


def test_a_key_at_the_end_of_a_long_line_is_still_found() -> None:
    parsed = parse_diff(_added("-----BEGIN " * 100_000 + KEY + "MIIB"))
    result = admission.canary_no_secret_marker(parsed, MARKERS)
    assert not result.ok and "src/blob.py:1" in result.detail


def test_matches_on_every_window_edge_are_found() -> None:
    pattern = re.compile("AKIA[0-9A-Z]{16}")
    for start in range(secretscan.STEP - 40, secretscan.STEP + 40):
        text = "x" * start + "AKIA" + "B" * 16 + "y" * (3 * secretscan.WINDOW)
        assert secretscan.search([pattern], text) is pattern, start
    assert secretscan.search([pattern], "x" * 3 * secretscan.WINDOW) is None


def test_a_match_as_long_as_a_step_is_found_anywhere() -> None:
    pattern = re.compile("BEGIN x*END")
    body = "BEGIN " + "x" * (secretscan.STEP - 10) + "END"
    for start in (0, 1, secretscan.STEP - 1, secretscan.STEP, 5 * secretscan.STEP + 7):
        assert secretscan.search([pattern], "." * start + body + "." * 10_000) is pattern, start


def test_over_the_cap_is_a_miss_with_a_reason() -> None:
    parsed = parse_diff(_added("a" * 2000))
    result = admission.canary_no_secret_marker(parsed, MARKERS, cap=1000)
    assert not result.ok and "over the 1000-byte cap" in result.detail and "split" in result.detail
    assert admission.canary_no_secret_marker(parsed, MARKERS).ok


def test_binary_bytes_count_toward_the_cap() -> None:
    parsed = parse_diff(_added("a"))
    result = admission.canary_no_secret_marker(parsed, MARKERS, {"x.bin": b"\0" * 5000}, cap=1000)
    assert not result.ok and "cap" in result.detail
