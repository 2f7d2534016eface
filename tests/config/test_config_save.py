"""save_config writes a YAML file that read_config + compile_config turn back into the same config."""
from __future__ import annotations

import math
import os

import pytest

from tidal.base.errors import ConfigError
from tidal.config import compile_config, read_config, save_config
from tidal.config.yaml_io import load_yaml


def test_saved_config_compiles_back_to_an_equal_config(create_config, tmp_path):
    main = {'exp_name': 'round', 'env': {'env_kwargs': {'max_episode_steps': 50, 'tag': '1e-3'}},
            'policy': {'learn': {'learning_rate': 3e-4}, 'model': {'depth': 3}}}
    cfg = compile_config(main, create_config, seed=5, overrides=['policy.learn.batch_size=16'])
    path = tmp_path / 'run' / 'config.yaml'
    save_config(cfg, str(path))
    again = compile_config(*read_config(str(path)), seed=5)
    assert again == cfg
    assert again.env.env_kwargs.tag == '1e-3'  # a string that looks like a float stays a string


def test_saved_file_splits_types_into_create_config(create_config, tmp_path):
    cfg = compile_config({}, create_config)
    path = tmp_path / 'config.yaml'
    save_config(cfg, str(path))
    saved = load_yaml(path.read_text())
    assert saved['create_config'] == {
        'env': {'type': 'test_cfg_env', 'import_names': []},
        'env_manager': {'type': 'test_cfg_manager'},
        'policy': {'type': 'test_cfg_policy', 'import_names': []},
    }
    assert 'type' not in saved['main_config']['policy'] and 'env_manager' not in saved['main_config']
    assert saved['main_config']['policy']['model'] == {'hidden_size': 32, 'obs_shape': 3, 'action_shape': 1}


def test_save_replaces_the_file_and_leaves_no_temporary_file(create_config, tmp_path):
    path = tmp_path / 'config.yaml'
    path.write_text('old')
    save_config(compile_config({}, create_config), str(path))
    assert os.listdir(tmp_path) == ['config.yaml']
    assert path.read_text().startswith('#')


def test_tuples_are_saved_as_lists(create_config, tmp_path):
    cfg = compile_config({'env': {'env_kwargs': {'size': (2, 3)}}}, create_config)
    cfg.env.env_kwargs.extra = (1, 2)  # set after compiling, as a pipeline might
    path = tmp_path / 'config.yaml'
    save_config(cfg, str(path))
    main, _ = read_config(str(path))
    assert main['env']['env_kwargs'] == {'size': [2, 3], 'extra': [1, 2]}


PENDULUM_SAC = {'env': {'type': 'gym'}, 'policy': {'type': 'sac'}}


@pytest.mark.parametrize('main, overrides', [
    ({'env': {'env_id': 'Pendulum-v1', 'stop_value': float('inf')}}, ()),
    ({'env': {'env_id': 'Pendulum-v1'}}, ['env.stop_value=inf']),
    ({'env': {'env_id': 'Pendulum-v1'}}, ['env.stop_value=.inf']),
    (load_yaml('env: {env_id: Pendulum-v1, stop_value: .inf}'), ()),
])
def test_infinite_stop_value_never_stops_and_survives_the_saved_config(tmp_path, main, overrides):
    cfg = compile_config(main, PENDULUM_SAC, overrides=overrides)
    assert cfg.env.stop_value == math.inf
    path = tmp_path / 'config.yaml'
    save_config(cfg, str(path))
    assert 'stop_value: .inf' in path.read_text()
    assert compile_config(*read_config(str(path))) == cfg


def test_nan_stop_value_is_still_refused():
    with pytest.raises(ConfigError) as err:
        compile_config({'env': {'env_id': 'Pendulum-v1', 'stop_value': float('nan')}}, PENDULUM_SAC)
    assert str(err.value) == "config key 'env.stop_value' must be a number (not NaN) or None, got nan"
