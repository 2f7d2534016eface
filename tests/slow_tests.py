"""The node ids of tests/slow_tests.txt, which tests/conftest.py marks `slow`."""
from __future__ import annotations

from pathlib import Path

SLOW_TESTS = Path(__file__).with_name('slow_tests.txt')


def slow_test_ids() -> set[str]:
    """Each line's node id, comments (`#` to the line's end) and blank lines left out."""
    lines = (line.split('#', 1)[0].strip() for line in SLOW_TESTS.read_text().splitlines())
    return {line for line in lines if line}
