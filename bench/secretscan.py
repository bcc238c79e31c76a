"""Bench: the secret-marker scan (issue 14) against Python's plain ``re.search`` per line, side by side.

The adversarial line is ``-----BEGIN `` repeated (no key in it): the default marker
``-----BEGIN .*PRIVATE KEY-----`` makes a plain search quadratic in the line's length
(a 1.1 MB line took 44.8 s).  Both scan the same line with the default markers and
must agree that it holds no key; the script prints each one's time and the ratio
(plain / ours) at a length the plain search finishes in a few seconds, and ours
alone at 1.1 MB.  Goal: linear, a 1.1 MB line in under 5 s.

    .venv/bin/python bench/secretscan.py [REPEATS]   (default 20000: a 220 kB line)
"""

from __future__ import annotations

import re
import sys
import time

from mergegate.records.policy import Canaries
from mergegate.rules import secretscan


def timed(func: object, *args: object) -> tuple[float, object]:
    start = time.perf_counter()
    result = func(*args)  # type: ignore[operator]
    return time.perf_counter() - start, result


def plain(patterns: list[re.Pattern[str]], text: str) -> re.Pattern[str] | None:
    return next((p for p in patterns if p.search(text)), None)


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    patterns = [re.compile(m) for m in Canaries().secret_markers]
    line = "-----BEGIN " * repeats
    base_s, base_hit = timed(plain, patterns, line)
    ours_s, ours_hit = timed(secretscan.search, patterns, line)
    assert base_hit is None and ours_hit is None
    print(f"line of {len(line)} chars: plain re.search {base_s:.2f} s, windowed scan {ours_s:.3f} s, "
          f"{base_s / ours_s:.0f}x faster")
    big = "-----BEGIN " * 100_000
    big_s, _ = timed(secretscan.search, patterns, big)
    print(f"line of {len(big)} chars: windowed scan {big_s:.2f} s (goal < 5 s; plain was 44.8 s)")


if __name__ == "__main__":
    main()
