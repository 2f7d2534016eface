"""config_comments reads key comments from class sources; format_config prints them as YAML comments."""
from __future__ import annotations

from tidal.config import comments_for, compile_config, config_comments, format_config
from tidal.base.defaults import FreeDict
from tidal.config.yaml_io import load_yaml


class Base:
    config = dict(
        # (int) Steps per call.
        steps=1,
        # (float) Step size,
        # in units of nothing.
        rate=0.1,

        undocumented=True,
        inner=dict(  # Settings of the inner loop.
            # (int) Inner repeats.
            repeats=2,
            deep={
                # (str) A dict literal key.
                'name': 'x',
                'count': 3,  # (int) Trailing comment.
            },
        ),
        free=FreeDict(
            # (bool) A free-form section's default.
            flag=True,
        ),
    )


class Child(Base):
    config = dict(
        # (int) Steps per call, overridden.
        steps=5,
        rate=0.2,
    )


def test_comments_of_nested_keys_are_read_from_the_source():
    assert config_comments(Base) == {
        'steps': '(int) Steps per call.',
        'rate': '(float) Step size,\nin units of nothing.',
        'inner': 'Settings of the inner loop.',
        'inner.repeats': '(int) Inner repeats.',
        'inner.deep.name': '(str) A dict literal key.',
        'inner.deep.count': '(int) Trailing comment.',
        'free.flag': "(bool) A free-form section's default.",
    }


def test_subclass_comment_wins_and_uncommented_override_keeps_the_base_comment():
    comments = config_comments(Child)
    assert comments['steps'] == '(int) Steps per call, overridden.'
    assert comments['rate'] == '(float) Step size,\nin units of nothing.'
    assert comments['inner.repeats'] == '(int) Inner repeats.'


def test_class_without_source_has_no_comments():
    namespace: dict = {}
    exec('class Made:\n    config = dict(a=1)  # comment\n', namespace)
    assert config_comments(namespace['Made']) == {}


def test_format_config_puts_comments_above_keys():
    cfg = {'steps': 5, 'inner': {'repeats': 2}}
    text = format_config(cfg, {'steps': 'first\nsecond', 'inner.repeats': 'how often'})
    assert text == '# first\n# second\nsteps: 5\n\ninner:\n  # how often\n  repeats: 2\n'


def test_formatted_config_is_valid_yaml_without_its_comments(create_config):
    cfg = compile_config({'env': {'env_kwargs': {'odd': 'a: b', 'lr': '1e-3', 'empty': {}, 'layers': [{'a': 1}],
                                                 'text': 'two\nlines'}}}, create_config)
    comments = comments_for(cfg)
    text = format_config(cfg, comments)
    assert '    # (int) Samples per update.\n    batch_size: 64\n' in text
    uncommented = '\n'.join(line for line in text.splitlines() if not line.lstrip().startswith('#'))
    assert load_yaml(uncommented) == cfg
    assert load_yaml(text) == cfg


def test_comments_are_found_when_the_module_name_now_names_another_file(tmp_path, monkeypatch):
    import importlib.util
    import sys
    first = tmp_path / 'first.py'
    first.write_text('class Documented:\n    config = dict(\n        # (int) Steps per call.\n        steps=1,\n'
                     '    )\n\n    def act(self):\n        return 1\n')
    (tmp_path / 'second.py').write_text('OTHER = 1\n')
    spec = importlib.util.spec_from_file_location('tidal_alias_mod', first)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, 'tidal_alias_mod', module)
    spec.loader.exec_module(module)
    other = importlib.util.spec_from_file_location('tidal_alias_mod', tmp_path / 'second.py')
    monkeypatch.setitem(sys.modules, 'tidal_alias_mod', importlib.util.module_from_spec(other))
    assert config_comments(module.Documented) == {'steps': '(int) Steps per call.'}
