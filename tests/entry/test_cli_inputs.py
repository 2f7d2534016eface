"""CLI numbers, seeds and config files: every bad input is one line on stderr and exit code 2."""
import os
import sys

import pytest

import tidal.config.loader as loader
import tidal.entry.pipelines as pipelines
from tidal.config import compile_config
from tidal.entry.cli import main
from tidal.entry.setup import load_config

CONFIG_YAML = """\
main_config:
  env: {env_id: Pendulum-v1}
  policy: {}
create_config:
  env: {type: gym}
  policy: {type: sac}
"""


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'Traceback' not in err, err
    return err.strip()


@pytest.fixture
def started(monkeypatch):
    """The configs `tidal train` would start runs with; no run starts."""
    configs = []
    monkeypatch.setattr(pipelines, 'start_run', lambda cfg, *args: configs.append(cfg))
    return configs


def write_config(tmp_path, seed=None):
    """The config file; `seed` is written as main_config's seed key when given."""
    path = tmp_path / 'run.yaml'
    text = CONFIG_YAML if seed is None else CONFIG_YAML.replace('main_config:\n', f'main_config:\n  seed: {seed}\n')
    path.write_text(text)
    return str(path)


# ----- numbers on the command line ------------------------------------------------------------

@pytest.mark.parametrize('args, message', [
    (['train', 'pendulum_sac', '-s', '-1'],
     "tidal train: error: argument -s/--seed: must be an integer in [0, 2**63 - 1], got '-1'"),
    (['train', 'pendulum_sac', '--seed', str(2**70)],
     f"tidal train: error: argument -s/--seed: must be an integer in [0, 2**63 - 1], got '{2**70}'"),
    (['train', 'pendulum_sac', '-s', '1.5'], "tidal train: error: argument -s/--seed: must be an integer, got '1.5'"),
    (['train', 'pendulum_sac', '--max-env-step', '-5'],
     "tidal train: error: argument --max-env-step: must be an integer >= 1, got '-5'"),
    (['train', 'pendulum_sac', '--max-env-step', '0'],
     "tidal train: error: argument --max-env-step: must be an integer >= 1, got '0'"),
    (['train', 'pendulum_sac', '--max-train-iter', '0'],
     "tidal train: error: argument --max-train-iter: must be an integer >= 1, got '0'"),
    (['eval', 'pendulum_sac', '--ckpt', 'best.pt', '--episodes', '-1'],
     "tidal eval: error: argument --episodes: must be an integer >= 1, got '-1'"),
    (['eval', 'pendulum_sac', '--ckpt', 'best.pt', '-s', '-1'],
     "tidal eval: error: argument -s/--seed: must be an integer in [0, 2**63 - 1], got '-1'"),
    (['collect-demos', 'pendulum_sac', '--ckpt', 'best.pt', '--episodes', '0', '-o', 'demos.npz'],
     "tidal collect-demos: error: argument --episodes: must be an integer >= 1, got '0'"),
    (['collect-demos', 'pendulum_sac', '--ckpt', 'best.pt', '--episodes', '1', '-o', 'demos.npz', '-s', '-3'],
     "tidal collect-demos: error: argument -s/--seed: must be an integer in [0, 2**63 - 1], got '-3'"),
])
def test_bad_numbers_are_refused_before_anything_runs(capsys, started, args, message):
    assert main(args) == 2
    assert one_error_line(capsys) == message
    assert started == []


def test_argparse_usage_errors_are_one_line(capsys):
    assert main(['train']) == 2
    assert one_error_line(capsys) == 'tidal train: error: the following arguments are required: config'


def test_largest_seed_is_accepted(tmp_path, started):
    assert main(['train', write_config(tmp_path), '-s', str(2**63 - 1), '--max-env-step', '1']) == 0
    assert started[0].seed == 2**63 - 1


# ----- seed precedence: -s, then the config's seed, then 0 -------------------------------------

@pytest.mark.parametrize('config_seed, args, seed', [
    (None, [], 0),
    (7, [], 7),
    (7, ['-s', '3'], 3),
    (7, ['--set', 'seed=5'], 5),
    (7, ['--set', 'seed=5', '-s', '0'], 0),
])
def test_seed_comes_from_the_cli_then_the_config_then_zero(tmp_path, started, config_seed, args, seed):
    assert main(['train', write_config(tmp_path, config_seed), '--max-env-step', '1', *args]) == 0
    assert started[0].seed == seed


def test_resumed_and_reloaded_configs_keep_their_seed():
    main_config = {'seed': 11, 'env': {'env_id': 'Pendulum-v1'}, 'policy': {}}
    create_config = {'env': {'type': 'gym'}, 'policy': {'type': 'sac'}}
    assert load_config((main_config, create_config)).seed == 11
    assert load_config((main_config, create_config), seed=2).seed == 2
    assert compile_config(main_config, create_config, infer_shapes=False).seed == 11


@pytest.mark.parametrize('config_seed, args, got', [
    (-1, [], '-1'),
    (2**70, [], str(2**70)),
    (None, ['--set', 'seed=-2'], '-2'),
])
def test_out_of_range_config_seed_is_one_line_naming_seed(tmp_path, capsys, started, config_seed, args, got):
    assert main(['train', write_config(tmp_path, config_seed), '--max-env-step', '1', *args]) == 2
    assert one_error_line(capsys) == f"tidal: error: config key 'seed' must be an int in [0, 2**63 - 1], got {got}"
    assert started == []


# ----- config files that cannot be read ----------------------------------------------------------

@pytest.mark.parametrize('name, text', [
    ('bad.yaml', CONFIG_YAML.encode()),
    ('bad.json', b'{"main_config": {}, "create_config": {}}'),
    ('bad.py', b'main_config = {}\ncreate_config = {}\n'),
])
def test_non_utf8_config_file_names_the_file_and_byte_offset(tmp_path, capsys, name, text):
    path = tmp_path / name
    path.write_bytes(text[:12] + b'\xe9' + text[12:])  # a latin-1 'e'
    assert main(['train', str(path), '--max-env-step', '1']) == 2
    assert one_error_line(capsys) == (f"tidal: error: config file '{path}' is not UTF-8 text: byte 0xe9 at byte "
                                      f"offset 12 cannot be decoded")


def test_byte_offset_counts_a_leading_byte_order_mark(tmp_path, capsys):
    path = tmp_path / 'bom.yaml'
    path.write_bytes(b'\xef\xbb\xbf' + b'main_config: \xff')
    assert main(['train', str(path), '--max-env-step', '1']) == 2
    assert 'byte 0xff at byte offset 16 cannot be decoded' in one_error_line(capsys)


def test_utf8_config_with_byte_order_mark_loads(tmp_path, started):
    path = tmp_path / 'bom.yaml'
    path.write_bytes(b'\xef\xbb\xbf' + CONFIG_YAML.encode())
    assert main(['train', str(path), '--max-env-step', '1']) == 0
    assert started[0].env.env_id == 'Pendulum-v1'


def test_unreadable_config_file_is_one_line(tmp_path, capsys, monkeypatch):
    path = write_config(tmp_path)

    def denied(*args, **kwargs):
        raise PermissionError(13, 'Permission denied', path)
    monkeypatch.setattr(loader, 'open', denied, raising=False)
    assert main(['train', path, '--max-env-step', '1']) == 2
    assert one_error_line(capsys) == f"tidal: error: config file '{path}' cannot be read: Permission denied"


def test_config_folder_is_one_line(tmp_path, capsys):
    folder = tmp_path / 'configs.yaml'
    folder.mkdir()
    assert main(['train', str(folder), '--max-env-step', '1']) == 2
    assert one_error_line(capsys) == (f"tidal: error: config path '{folder}' is a folder; "
                                      f"name the config file inside it")


# ----- --import: a module name or a file path; import_names beside the config --------------------

USER_POLICY = """\
from tidal.policies.sac import SACPolicy
from tidal.registry import POLICY_REGISTRY


@POLICY_REGISTRY.register('{name}', force=True)
class UserPolicy(SACPolicy):
    pass
"""


@pytest.fixture
def user_modules(tmp_path, monkeypatch):
    """The working folder is tmp_path; modules imported from it and import path entries are undone after."""
    modules, path = set(sys.modules), list(sys.path)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for name in set(sys.modules) - modules:
        if (getattr(sys.modules[name], '__file__', None) or '').startswith(str(tmp_path)):
            del sys.modules[name]
    sys.path[:] = path


def user_config(folder, policy, import_names=()):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / 'run.yaml'
    text = CONFIG_YAML.replace('type: sac', f'type: {policy}')
    if import_names:
        text = text.replace('main_config:\n', f'main_config:\n  import_names: {list(import_names)}\n')
    path.write_text(text)
    return str(path)


def test_import_takes_file_paths(user_modules, started):
    (user_modules / 'cli_file_policy.py').write_text(USER_POLICY.format(name='cli_file_policy'))
    (user_modules / 'sub').mkdir()
    (user_modules / 'sub' / 'cli_sub_policy.py').write_text(USER_POLICY.format(name='cli_sub_policy'))
    for path, policy in (('./cli_file_policy.py', 'cli_file_policy'), ('sub/cli_sub_policy.py', 'cli_sub_policy')):
        config = user_config(user_modules / policy, policy)
        assert main(['train', config, '--import', path, '--max-env-step', '1']) == 0
        assert started[-1].policy.type == policy
        assert sys.modules[policy].UserPolicy.__module__ == policy  # named after the file: it pickles


def test_import_takes_module_names(user_modules, started):
    package = user_modules / 'cli_user_pkg'
    package.mkdir()
    (package / '__init__.py').write_text('')
    (package / 'policies.py').write_text(USER_POLICY.format(name='cli_pkg_policy'))
    (user_modules / 'cli_cwd_policy.py').write_text(USER_POLICY.format(name='cli_cwd_policy'))
    config = user_config(user_modules / 'configs', 'cli_pkg_policy')
    # the working folder is on the import path, as under `python -m tidal`
    assert main(['train', config, '--import', 'cli_user_pkg.policies', '--import', 'cli_cwd_policy',
                 '--max-env-step', '1']) == 0
    assert started[0].policy.type == 'cli_pkg_policy'
    assert 'cli_cwd_policy' in sys.modules


def test_import_names_find_a_module_beside_the_config(user_modules, started):
    folder = user_modules / 'project'
    config = user_config(folder, 'cli_beside_policy', import_names=['cli_beside_policy'])
    (folder / 'cli_beside_policy.py').write_text(USER_POLICY.format(name='cli_beside_policy'))
    (user_modules / 'elsewhere').mkdir()
    os.chdir(user_modules / 'elsewhere')  # neither the working folder nor PYTHONPATH holds it
    assert main(['train', config, '--max-env-step', '1']) == 0
    assert started[0].policy.type == 'cli_beside_policy'
    assert started[0].import_names == ['cli_beside_policy']


@pytest.mark.parametrize('value, message', [
    ('./cli_missing.py', "cannot import './cli_missing.py' named in --import: file not found"),
    ('sub/cli_missing.py', "cannot import 'sub/cli_missing.py' named in --import: file not found"),
    ('cli_missing_module', "cannot import module 'cli_missing_module' named in --import: "
                           "No module named 'cli_missing_module'"),
    ('./cli_raises.py', "'./cli_raises.py' named in --import failed to import: RuntimeError: boom at import"),
    ('cli_raises', "module 'cli_raises' named in --import failed to import: RuntimeError: boom at import"),
    ('./cli_syntax.py', "'./cli_syntax.py' named in --import failed to import: syntax error (cli_syntax.py, line 2): "),
    ('cli_syntax', "module 'cli_syntax' named in --import failed to import: syntax error (cli_syntax.py, line 2): "),
])
def test_a_bad_import_is_one_line_naming_it(user_modules, capsys, started, value, message):
    (user_modules / 'cli_raises.py').write_text("raise RuntimeError('boom at import')\n")
    (user_modules / 'cli_syntax.py').write_text('x = 1\ndef broken(:\n')
    assert main(['train', write_config(user_modules), '--import', value, '--max-env-step', '1']) == 2
    assert one_error_line(capsys).startswith(f'tidal: error: {message}')
    assert value.split('/')[-1].removesuffix('.py') not in sys.modules
    assert started == []
