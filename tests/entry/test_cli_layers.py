"""`tidal config show NAME > x.yaml` runs as it is, and `--config FILE` layers a few keys over a zoo config."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import tidal.entry.pipelines as pipelines
from tidal.config import read_config
from tidal.entry.cli import main
from tidal.entry.setup import load_config

CONFIGS_PAGE = Path(__file__).resolve().parents[2] / 'docs' / 'configs.md'
A_FEW_KEYS = """\
policy:
  random_collect_size: 500
  learn:
    batch_size: 128
    learning_rate_q: 1e-3
"""


class NoTraining:
    """Stands in for the run shell: the run folder is made and its config written, nothing trains."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    def train(self) -> None:
        return None


# the budget just passes each config's warm-up (random_collect_size 1000; PPO learns after 300 steps)
@pytest.mark.parametrize('name, budget', [('pendulum_sac', '1100'), ('cartpole_ppo', '300')])
def test_config_show_output_trains_as_it_is(tmp_path, monkeypatch, capsys, name, budget):
    monkeypatch.chdir(tmp_path)
    assert main(['config', 'show', name]) == 0
    (tmp_path / 'x.yaml').write_text(capsys.readouterr().out)
    assert main(['train', 'x.yaml', '--max-env-step', budget, '--no-progress']) == 0
    run_config = load_config(str(tmp_path / name / 'config.yaml'))
    assert run_config == load_config(name)


def test_train_with_config_files_records_the_layers_in_config_yaml(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(pipelines, 'Run', NoTraining)
    (tmp_path / 'my.yaml').write_text(A_FEW_KEYS)
    (tmp_path / 'seed.yaml').write_text('main_config:\n  seed: 7\n')
    assert main(['train', 'pendulum_sac', '--config', 'my.yaml', '--config', 'seed.yaml', '--max-env-step', '2000',
                 '--set', 'policy.learn.batch_size=64']) == 0
    saved = tmp_path / 'pendulum_sac' / 'config.yaml'
    assert saved.read_text().splitlines()[2:6] == [
        "#   zoo config 'pendulum_sac'",
        f"#   config file '{tmp_path / 'my.yaml'}'",
        f"#   config file '{tmp_path / 'seed.yaml'}'",
        '#   --set policy.learn.batch_size=64',
    ]
    cfg = load_config(str(saved))  # what `tidal train RUN/config.yaml` and `tidal resume` read
    assert (cfg.seed, cfg.policy.learn.batch_size, cfg.policy.random_collect_size) == (7, 64, 500)
    assert read_config(str(saved))[1]['policy'] == {'type': 'sac', 'import_names': []}


@pytest.mark.parametrize('command, options', [(['config', 'show'], []), (['train'], []),
                                             (['eval'], ['--ckpt', 'none.pt'])])
def test_bad_key_in_a_config_file_is_one_line_naming_the_file(tmp_path, monkeypatch, capsys, command, options):
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'my.yaml').write_text('policy:\n  learn:\n    batch_sise: 128\n')
    assert main([*command, 'pendulum_sac', '--config', 'my.yaml', *options]) == 2
    err = capsys.readouterr().err
    assert err == ("tidal: error: config file 'my.yaml': unknown config key 'policy.learn.batch_sise'; "
                   "did you mean 'policy.learn.batch_size'?\n")


def test_docs_example_layers_its_keys_over_pendulum_sac(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    block = re.search(r'^```yaml\n# my\.yaml\n(.*?)^```$', CONFIGS_PAGE.read_text(), re.MULTILINE | re.DOTALL)
    assert block, 'docs/configs.md has no my.yaml example'
    (tmp_path / 'my.yaml').write_text(block.group(1))
    assert main(['config', 'show', 'pendulum_sac', '--config', 'my.yaml']) == 0
    (tmp_path / 'resolved.yaml').write_text(capsys.readouterr().out)
    assert load_config('resolved.yaml') == load_config('pendulum_sac', overrides=[
        'policy.random_collect_size=500', 'policy.learn.batch_size=128', 'policy.learn.learning_rate_q=1e-3'])
