"""Every rule form the guide documents round-trips: written in a `config` comment it parses back to itself, takes a
value that fits and refuses one that does not in one line; an 'or None' rule takes None."""
from __future__ import annotations

import importlib.util
import math
import re
import sys
from pathlib import Path

import pytest

import tidal.config.rules as rules_module
from tidal.base.errors import ConfigError
from tidal.config.declared import class_rules
from tidal.config.rules import parse_rule, rule_of_comment

DOCS = Path(__file__).resolve().parents[2] / 'docs'
#: The pages that document the rules, and the rule grammar's own docstring.
GUIDE_PAGES = ('configs.md', 'write_your_own_algorithm.md', 'own-algorithm.md')

#: Rule -> (a value that fits, one that does not, the one line that refuses it at key 'k').
FORMS = {
    # the guide's
    'int > 0': (3, 0, "config key 'k' must be > 0, got 0"),
    'int in [1, 100]': (100, 101, "config key 'k' must be in [1, 100], got 101"),
    'float > 0': (1e-3, 0.0, "config key 'k' must be > 0, got 0.0"),
    'float >= 0': (0, -0.5, "config key 'k' must be >= 0, got -0.5"),
    'float in [0, 1]': (1, 1.5, "config key 'k' must be in [0, 1], got 1.5"),
    'float in (0, 1]': (1.0, 0.0, "config key 'k' must be in (0, 1], got 0.0"),
    'float > 0 or None': (None, -1.0, "config key 'k' must be > 0 or None, got -1.0"),
    "str in {'mean', 'sum'}": ('sum', 'max', "config key 'k' must be in {'mean', 'sum'}, got 'max'"),
    'list[int > 0]': ([64, 64], [64, 0], "config key 'k[1]' must be > 0, got 0"),
    # each production of the grammar in rules.py's docstring
    'int': (-7, 1.5, "config key 'k' must be int, got float (1.5)"),
    'bool': (False, 1, "config key 'k' must be bool, got int (1)"),
    'None': (None, 0, "config key 'k' must be None, got int (0)"),
    'str': ('', 3, "config key 'k' must be str, got int (3)"),
    'float': (1, math.inf, "config key 'k' must be finite, got inf"),
    'int >= -1': (-1, -2, "config key 'k' must be >= -1, got -2"),
    'int < 10': (9, 10, "config key 'k' must be < 10, got 10"),
    'float <= 1.5': (1.5, 1.6, "config key 'k' must be <= 1.5, got 1.6"),
    'float > -1.5': (-1.0, -1.5, "config key 'k' must be > -1.5, got -1.5"),
    'float in [0, inf]': (math.inf, math.nan, "config key 'k' must be a number (not NaN), got nan"),
    'float in [-inf, 0)': (-math.inf, 0.0, "config key 'k' must be in [-inf, 0), got 0.0"),
    'float in [1e-3, 1]': (1e-3, 1e-4, "config key 'k' must be in [1e-3, 1], got 0.0001"),
    'int in [0, 100_000]': (100_000, 100_001, "config key 'k' must be in [0, 100_000], got 100001"),
    'int in [0, 2**63 - 1]': (2**63 - 1, 2**63, "config key 'k' must be in [0, 2**63 - 1], got 9223372036854775808"),
    'int in {1, 2, 4}': (4, 3, "config key 'k' must be in {1, 2, 4}, got 3"),
    "str matching '[a-z]+'": ('abc', 'ABC', "config key 'k' must be a str matching '[a-z]+', got 'ABC'"),
    'list[float] of length 2': ([0.5, 1], [0.5], "config key 'k' must be a list of length 2, got [0.5]"),
    'list[list[int >= 0]]': ([[0], [1, 2]], [[0], [-1]], "config key 'k[1][0]' must be >= 0, got -1"),
    'int > 0 or None': (None, 0, "config key 'k' must be > 0 or None, got 0"),
    'str or None': (None, 1, "config key 'k' must be str or None, got int (1)"),
}


def _documented_rules(text: str) -> set[str]:
    """The rules of the `# (rule) What it sets.` comments in `text`, as they parse."""
    found = set()
    for comment in re.findall(r'#\s*(\(.*)', text):
        rule = rule_of_comment(comment)
        if rule is not None:
            found.add(rule.text)
    return found


def test_every_rule_form_the_guide_documents_is_covered_here():
    documented = set().union(*(_documented_rules((DOCS / page).read_text(encoding='utf-8')) for page in GUIDE_PAGES
                               if (DOCS / page).exists()))
    documented |= _documented_rules(rules_module.__doc__ or '')
    assert documented >= {'int > 0', 'float in [0, 1]', 'float > 0 or None'}
    assert documented <= set(FORMS)


@pytest.mark.parametrize('text', sorted(FORMS))
def test_rule_round_trips_through_its_comment_and_checks_values(text):
    fits, breaks, message = FORMS[text]
    rule = rule_of_comment(f'({text}) What the key sets.')
    assert rule is not None and rule.text == text == parse_rule(text).text
    rule.check(fits, 'k')
    with pytest.raises(ConfigError) as refused:
        rule.check(breaks, 'k')
    assert str(refused.value) == message
    assert '\n' not in message


@pytest.mark.parametrize('text', sorted(text for text in FORMS if text.endswith('or None')))
def test_or_none_rule_takes_none(text):
    parse_rule(text).check(None, 'k')
    assert parse_rule(text).allows_none


def test_rules_written_in_a_class_config_come_back_from_its_source(tmp_path, monkeypatch):
    """The comment finder and the parser together: each form written in a class's `config` literal is the rule of
    its key, and each default that fits keeps it."""
    keys = {f'key_{index}': text for index, text in enumerate(FORMS)}
    lines = ['class Declared:', '    config = dict(']
    for key, text in keys.items():
        lines += [f'        # ({text}) What {key} sets.', f'        {key}={FORMS[text][0]!r},']
    lines += ['    )', '']
    path = tmp_path / 'tidal_rule_forms_module.py'
    path.write_text('from math import inf\n\n' + '\n'.join(lines).replace('nan', "float('nan')"), encoding='utf-8')
    spec = importlib.util.spec_from_file_location('tidal_rule_forms_module', path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, 'tidal_rule_forms_module', module)
    spec.loader.exec_module(module)
    rules = class_rules(module.Declared)
    assert {key: rule.text for key, rule in rules.items()} == keys
