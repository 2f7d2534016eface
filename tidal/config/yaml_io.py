"""YAML reading and writing for configs.

PyYAML follows YAML 1.1, where a float needs a dot: `1e-3` would load as the string '1e-3'. Configs
are full of learning rates written that way, so the loader reads exponent notation as a float, and the
dumper quotes strings that would otherwise read back as floats.
"""
from __future__ import annotations

import json
import re
from typing import Any

import yaml

_EXPONENT_FLOAT = re.compile(r'^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)[eE][-+]?[0-9]+$')
_INFINITY = re.compile(r'[-+]?(?:inf|infinity)', re.IGNORECASE)
_FLOAT_TAG = 'tag:yaml.org,2002:float'


class ConfigLoader(yaml.SafeLoader):
    """SafeLoader that also reads `1e-3`, `3E5` and `.5e-2` as floats."""


class ConfigDumper(yaml.SafeDumper):
    """SafeDumper that quotes strings such as '1e-3', which ConfigLoader would read as floats."""


for _cls in (ConfigLoader, ConfigDumper):
    _cls.add_implicit_resolver(_FLOAT_TAG, _EXPONENT_FLOAT, list('-+0123456789.'))


def load_yaml(text: str) -> Any:
    """Parse YAML text with ConfigLoader; raises yaml.YAMLError on a syntax error."""
    return yaml.load(text, Loader=ConfigLoader)


def dump_yaml(data: Any) -> str:
    """Block-style YAML of plain data, keys in their given order."""
    return yaml.dump(data, Dumper=ConfigDumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=100)


def parse_scalar(text: str) -> Any:
    """The value of a `--set KEY=VALUE` right-hand side; text that is not valid YAML stays a string.
    `inf` and `-inf` are floats as Python writes them, besides YAML's `.inf` (`env.stop_value=inf`)."""
    if not text.strip():
        return text
    if _INFINITY.fullmatch(text.strip()):
        return float(text)
    try:
        return load_yaml(text)
    except yaml.YAMLError:
        return text


def format_scalar(value: Any) -> str:
    """One-line YAML for a plain value: a scalar, or a list/dict in flow style."""
    if isinstance(value, str) and any(char in value for char in '\n\r\t'):
        return json.dumps(value)  # a JSON string is a valid double-quoted YAML scalar
    text = yaml.dump(value, Dumper=ConfigDumper, default_flow_style=True, allow_unicode=True,
                     width=1 << 30)
    if text.endswith('\n...\n'):
        text = text[:-len('\n...\n')]
    return text.rstrip('\n')
