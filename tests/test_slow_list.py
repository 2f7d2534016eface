"""tests/slow_tests.txt names tests that exist: a renamed or removed test would otherwise silently move back into
the README's test command (or out of the slow run)."""
from __future__ import annotations

import re
from pathlib import Path

from slow_tests import SLOW_TESTS, slow_test_ids

ROOT = Path(__file__).resolve().parents[1]


def test_every_slow_test_id_names_a_test_function_of_its_file():
    ids = slow_test_ids()
    assert ids, f'{SLOW_TESTS} lists no test'
    missing = []
    for node_id in sorted(ids):
        path, _, name = node_id.partition('::')
        function = re.sub(r'\[.*\]$', '', name.split('::')[-1])
        source = ROOT / path
        if not source.is_file() or not re.search(rf'^\s*(?:async )?def {re.escape(function)}\(', source.read_text(),
                                                 re.MULTILINE):
            missing.append(node_id)
    assert not missing, f'{SLOW_TESTS.name} names tests that do not exist: {missing}'
