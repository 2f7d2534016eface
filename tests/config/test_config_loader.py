"""Reading configs from .py, .yaml and .json files and from zoo names."""
from __future__ import annotations

import json

import pytest

from tidal.config import loader, read_config, resolve_config_source, zoo_names
from tidal.base.errors import ConfigError

MAIN = {'exp_name': 'demo', 'policy': {'learn': {'learning_rate': 0.001}}}
CREATE = {'env': {'type': 'test_cfg_env'}, 'policy': {'type': 'test_cfg_policy'}}


def test_reads_python_config_globals(tmp_path):
    path = tmp_path / 'demo.py'
    path.write_text('from easydict import EasyDict\n'
                    "main_config = EasyDict(dict(exp_name='demo', policy=dict(learn=dict(learning_rate=1e-3))))\n"
                    "create_config = dict(env=dict(type='test_cfg_env'), policy=dict(type='test_cfg_policy'))\n")
    main, create = read_config(str(path))
    assert (main, create) == (MAIN, CREATE)
    assert type(main['policy']) is dict  # EasyDict turned into plain dicts


def test_reads_yaml_config_with_exponent_floats(tmp_path):
    path = tmp_path / 'demo.yaml'
    path.write_text('main_config:\n  exp_name: demo\n  policy:\n    learn:\n      learning_rate: 1e-3\n'
                    'create_config:\n  env: {type: test_cfg_env}\n  policy: {type: test_cfg_policy}\n')
    main, create = read_config(str(path))
    assert (main, create) == (MAIN, CREATE)
    assert isinstance(main['policy']['learn']['learning_rate'], float)


def test_reads_json_config(tmp_path):
    path = tmp_path / 'demo.json'
    path.write_text(json.dumps({'main_config': MAIN, 'create_config': CREATE}))
    assert read_config(str(path)) == (MAIN, CREATE)


def test_missing_file_is_named():
    with pytest.raises(ConfigError) as err:
        read_config('x.yaml')
    assert str(err.value) == "config file 'x.yaml' not found"


def test_unknown_extension_is_rejected(tmp_path):
    path = tmp_path / 'demo.toml'
    path.write_text('')
    with pytest.raises(ConfigError, match=r"unknown extension '\.toml'; use \.py, \.yaml, \.yml or \.json"):
        read_config(str(path))


def test_yaml_syntax_error_names_the_line(tmp_path):
    path = tmp_path / 'bad.yaml'
    path.write_text('main_config:\n  exp_name: demo\n  policy: [1, 2\ncreate_config: {}\n')
    with pytest.raises(ConfigError, match=rf"invalid YAML in config file '{path}' at line 4: "):
        read_config(str(path))


def test_json_syntax_error_names_the_line(tmp_path):
    path = tmp_path / 'bad.json'
    path.write_text('{\n  "main_config": {},\n  "create_config": {,}\n}\n')
    with pytest.raises(ConfigError, match=rf"invalid JSON in config file '{path}' at line 3: "):
        read_config(str(path))


def test_python_error_is_one_line(tmp_path):
    path = tmp_path / 'broken.py'
    path.write_text('main_config = dict(\n')
    with pytest.raises(ConfigError, match=rf"syntax error in config file '{path}' at line 1"):
        read_config(str(path))
    path.write_text('main_config = undefined_name\n')
    with pytest.raises(ConfigError) as err:
        read_config(str(path))
    assert str(err.value) == (f"config file '{path}' failed to run: NameError: "
                              f"name 'undefined_name' is not defined")


@pytest.mark.parametrize('missing', ['main_config', 'create_config'])
def test_both_entries_are_required(tmp_path, missing):
    path = tmp_path / 'half.json'
    path.write_text(json.dumps({key: value for key, value in
                                (('main_config', MAIN), ('create_config', CREATE)) if key != missing}))
    with pytest.raises(ConfigError, match=rf"config file '{path}' defines no '{missing}'"):
        read_config(str(path))


@pytest.fixture
def zoo(tmp_path, monkeypatch):
    folder = tmp_path / 'zoo'
    folder.mkdir()
    (folder / '__init__.py').write_text('')
    for name in ('pendulum_sac', 'cartpole_ppg'):
        (folder / f'{name}.py').write_text(f"main_config = dict(exp_name='{name}')\n"
                                           f"create_config = dict(policy=dict(type='sac'))\n")
    monkeypatch.setattr(loader, 'ZOO_DIR', str(folder))
    return folder


def test_zoo_names_lists_config_modules(zoo):
    assert zoo_names() == ['cartpole_ppg', 'pendulum_sac']


def test_zoo_name_resolves_to_its_config(zoo):
    main, create = resolve_config_source('pendulum_sac')
    assert main == {'exp_name': 'pendulum_sac'} and create == {'policy': {'type': 'sac'}}


def test_existing_path_wins_over_zoo(zoo, tmp_path):
    path = tmp_path / 'mine.json'
    path.write_text(json.dumps({'main_config': MAIN, 'create_config': CREATE}))
    assert resolve_config_source(str(path)) == (MAIN, CREATE)


def test_unknown_zoo_name_suggests_the_closest(zoo):
    with pytest.raises(ConfigError) as err:
        resolve_config_source('pendulum_sc')
    assert str(err.value) == "no config file or zoo config named 'pendulum_sc'; did you mean 'pendulum_sac'?"


def test_run_folder_named_after_a_zoo_config_does_not_hide_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'pendulum_sac').mkdir()  # what `tidal train pendulum_sac` leaves behind
    main_config, create_config = resolve_config_source('pendulum_sac')
    assert main_config['exp_name'] == 'pendulum_sac' and create_config['policy']['type'] == 'sac'


def test_other_folder_given_as_config_is_an_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'my_run').mkdir()
    with pytest.raises(ConfigError, match="config path 'my_run' is a folder; name the config file inside it"):
        resolve_config_source('my_run')
