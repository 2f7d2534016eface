"""The node ids of tests/slow_tests.txt, which tests/conftest.py marks `slow`."""
from __future__ import annotations

import re
from pathlib import Path

SLOW_TESTS = Path(__file__).with_name('slow_tests.txt')
#: a node id (its parameters' id in brackets may hold blanks and `#`), then an optional `# comment`
LINE = re.compile(r'([^\s\[#]+(?:\[.*?\])?)\s*(?:#.*)?')


def slow_test_ids() -> set[str]:
    """Each line's node id; comments (from a `#` after the node id, or at a line's start) and blank lines left
    out."""
    ids = set()
    for number, line in enumerate(SLOW_TESTS.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        node = LINE.fullmatch(line)
        if node is None:
            raise ValueError(f'{SLOW_TESTS.name}, line {number}: not a node id: {line!r}')
        ids.add(node.group(1))
    return ids
