"""Layered configs: files of a few keys over a zoo config (`--config`), a file's `base`, and which file an
error came from."""
from __future__ import annotations

import json

import pytest

from tidal.base.errors import ConfigError
from tidal.config import ConfigLayers, read_config, resolve_config_source
from tidal.config.loader import Layer, merge_layers
from tidal.config.saver import save_config
from tidal.entry.setup import load_config, load_layered

A_FEW_KEYS = """\
main_config:
  policy:
    random_collect_size: 500
    learn:
      batch_size: 128
      learning_rate_q: 1e-3
"""
SAME_KEYS_AS_SET = ['policy.random_collect_size=500', 'policy.learn.batch_size=128',
                    'policy.learn.learning_rate_q=1e-3']


def write(folder, name, text):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def test_a_few_keys_are_merged_over_the_zoo_config(tmp_path):
    layered = load_config(ConfigLayers('pendulum_sac', [write(tmp_path, 'my.yaml', A_FEW_KEYS)]))
    assert layered == load_config('pendulum_sac', overrides=SAME_KEYS_AS_SET)
    # keys the file leaves out keep the zoo config's values, not the policy's defaults
    assert layered.policy.learn.learning_rate_policy == 3e-4 and layered.env.evaluator_env_num == 5


def test_main_config_keys_alone_read_as_main_config(tmp_path):
    fragment = write(tmp_path, 'fragment.yaml', 'policy:\n  learn:\n    batch_size: 128\n')
    layout = write(tmp_path, 'layout.yaml', 'main_config:\n  policy:\n    learn:\n      batch_size: 128\n')
    assert (load_config(ConfigLayers('pendulum_sac', [fragment]))
            == load_config(ConfigLayers('pendulum_sac', [layout]))
            == load_config('pendulum_sac', overrides=['policy.learn.batch_size=128']))


def test_files_apply_in_order_and_overrides_last(tmp_path):
    first = write(tmp_path, 'first.yaml', 'policy:\n  learn: {batch_size: 64, learning_rate_q: 0.01}\n')
    second = write(tmp_path, 'second.json', json.dumps({'policy': {'learn': {'batch_size': 32}}}))
    cfg = load_config(ConfigLayers('pendulum_sac', [first, second]), overrides=['policy.learn.learning_rate_q=0.5'])
    assert (cfg.policy.learn.batch_size, cfg.policy.learn.learning_rate_q) == (32, 0.5)


def test_create_config_of_a_layer_changes_the_types(tmp_path):
    env_file = write(tmp_path, 'env.yaml', 'create_config:\n  env_manager: {type: subprocess}\n')
    assert load_config(ConfigLayers('pendulum_sac', [env_file])).env_manager.type == 'subprocess'


def test_unknown_key_names_the_file_and_the_full_key_path(tmp_path):
    good = write(tmp_path, 'good.yaml', A_FEW_KEYS)
    bad = write(tmp_path, 'bad.yaml', 'policy:\n  learn:\n    batch_sise: 128\n')
    with pytest.raises(ConfigError) as err:
        load_config(ConfigLayers('pendulum_sac', [good, bad]))
    assert str(err.value) == (f"config file '{bad}': unknown config key 'policy.learn.batch_sise'; "
                              f"did you mean 'policy.learn.batch_size'?")


def test_wrong_type_names_the_file(tmp_path):
    bad = write(tmp_path, 'bad.yaml', A_FEW_KEYS)
    later = write(tmp_path, 'later.yaml', 'main_config:\n  policy:\n    learn:\n      batch_size: many\n')
    with pytest.raises(ConfigError) as err:
        load_config(ConfigLayers('pendulum_sac', [bad, later]))
    assert str(err.value) == (f"config file '{later}': config key 'policy.learn.batch_size' must be int, "
                              f"got str ('many')")


def test_error_of_an_override_names_no_file(tmp_path):
    good = write(tmp_path, 'good.yaml', A_FEW_KEYS)
    with pytest.raises(ConfigError) as err:
        load_config(ConfigLayers('pendulum_sac', [good]), overrides=['policy.learn.batch_sise=3'])
    assert str(err.value) == ("unknown config key 'policy.learn.batch_sise'; "
                              "did you mean 'policy.learn.batch_size'?")


def test_base_chain_of_yaml_json_and_python_files(tmp_path):
    write(tmp_path, 'common/base.py', "base = 'pendulum_sac'\nmain_config = dict(env=dict(evaluator_env_num=2))\n")
    write(tmp_path, 'common/middle.json', json.dumps({'base': 'base.py', 'policy': {'learn': {'batch_size': 64}}}))
    top = write(tmp_path, 'top.yaml', 'base: common/middle.json\nmain_config:\n  policy:\n    learn:\n'
                                      '      learning_rate_q: 0.01\n')
    resolved = load_layered(top)
    expected = load_config('pendulum_sac', overrides=['env.evaluator_env_num=2', 'policy.learn.batch_size=64',
                                                      'policy.learn.learning_rate_q=0.01'])
    assert resolved.cfg == expected
    assert resolved.sources == ("zoo config 'pendulum_sac'", f"config file '{tmp_path / 'common' / 'base.py'}'",
                                f"config file '{tmp_path / 'common' / 'middle.json'}'", f"config file '{top}'")


def test_key_error_in_a_file_with_a_base_names_that_file(tmp_path):
    top = write(tmp_path, 'top.yaml', 'base: pendulum_sac\nenv:\n  stop_valu: -150\n')
    with pytest.raises(ConfigError) as err:
        load_config(top)
    assert str(err.value) == f"config file '{top}': unknown config key 'env.stop_valu'; did you mean 'env.stop_value'?"


def test_base_cycle_is_one_line(tmp_path, monkeypatch):
    write(tmp_path, 'a.yaml', 'base: b.yaml\n')
    write(tmp_path, 'b.yaml', 'base: a.yaml\n')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as err:
        read_config('a.yaml')
    assert str(err.value) == "config bases form a cycle: 'a.yaml' -> 'b.yaml' -> 'a.yaml'"


def test_missing_base_names_the_file_and_the_base(tmp_path):
    path = write(tmp_path, 'mine.yaml', 'base: pendulum_sak\n')
    with pytest.raises(ConfigError) as err:
        resolve_config_source(path)
    assert str(err.value) == (f"config file '{path}' has base 'pendulum_sak', which is neither a file (relative "
                              f"to its folder) nor a zoo config; did you mean 'pendulum_sac' or 'pendulum_sac_v' "
                              f"or 'pendulum_taac'?")


def test_base_must_be_a_name(tmp_path):
    path = write(tmp_path, 'mine.yaml', 'base: [pendulum_sac]\n')
    with pytest.raises(ConfigError) as err:
        read_config(path)
    assert str(err.value) == (f"'base' in config file '{path}' must name a zoo config or a config file, "
                              f"got list (['pendulum_sac'])")


def test_keys_beside_the_two_entries_are_refused_in_a_layer(tmp_path):
    path = write(tmp_path, 'mixed.yaml', 'main_config: {}\npolicy: {}\n')
    with pytest.raises(ConfigError) as err:
        load_config(ConfigLayers('pendulum_sac', [path]))
    assert str(err.value) == (f"config file '{path}' has 'policy' beside main_config/create_config; "
                              f"put it under main_config")


def test_file_without_base_still_needs_both_entries(tmp_path):
    path = write(tmp_path, 'half.yaml', 'policy: {}\n')
    with pytest.raises(ConfigError, match=rf"config file '{path}' defines no 'main_config'"):
        load_config(path)


def test_mappings_merge_lists_replace_and_import_names_add_up():
    below = Layer('below', 'below', {'import_names': ['a'], 'policy': {'model': {'sizes': [1, 2], 'depth': 2}}},
                  {'policy': {'type': 'sac', 'import_names': ['p']}})
    above = Layer('above', 'above', {'import_names': ['b', 'a'], 'policy': {'model': {'sizes': [3]}}},
                  {'policy': {'import_names': ['q']}})
    assert merge_layers([below, above]) == (
        {'import_names': ['a', 'b'], 'policy': {'model': {'sizes': [3], 'depth': 2}}},
        {'policy': {'type': 'sac', 'import_names': ['p', 'q']}})


def test_saved_config_records_its_layers_and_reads_back_as_it_is(tmp_path):
    resolved = load_layered(ConfigLayers('pendulum_sac', [write(tmp_path, 'my.yaml', A_FEW_KEYS)]),
                            overrides=['policy.learn.batch_size=64'])
    path = tmp_path / 'config.yaml'
    save_config(resolved.cfg, path, resolved.sources)
    assert path.read_text().splitlines()[1:5] == [
        "# Made from these layers, each merged over the ones before (and all over the classes' defaults):",
        "#   zoo config 'pendulum_sac'",
        f"#   config file '{tmp_path / 'my.yaml'}'",
        '#   --set policy.learn.batch_size=64',
    ]
    assert load_config(str(path)) == resolved.cfg
