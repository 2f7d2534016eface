"""`tidal collect-demos` on the checkpoint of every registered policy's short run (test_devices.py's SHORT_RUNS):
the run folder given as --ckpt, the recorded columns the env's own whatever the policy stores for its training,
both formats, and one line with the recorded episodes' returns."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import minari
import pytest
import torch
from test_devices import SHORT_RUNS, budget, demos, short_run_overrides  # noqa: F401  (demos: what SQIL imitates)

from tidal.entry.cli import main
from tidal.entry.demos import collect_demos
from tidal.entry.pipelines import train
from tidal.worker.demos import load_demos

DEMO_COLUMNS = ['action', 'next_obs', 'obs', 'reward', 'terminated', 'truncated']


@pytest.fixture(scope='module')
def short_run(demos, tmp_path_factory) -> Callable[[str], Path]:  # noqa: F811  (the imported fixture)
    """The run folder of a policy's short run, trained once for the tests of this module."""
    runs: dict[str, Path] = {}

    def run_dir(name: str) -> Path:
        if name not in runs:
            config, steps, _ = SHORT_RUNS[name]
            folder = tmp_path_factory.mktemp(name) / 'run'
            runs[name] = train(config, seed=0, **budget(name, steps), progress=False,
                               overrides=short_run_overrides(name, demos, f'exp_name={folder}')).run_dir
        return runs[name]
    return run_dir


def returns_line(returns: list[float], ckpt: Path) -> str:
    mean = sum(returns) / len(returns)
    return (f"tidal: recorded {len(returns)} episodes with '{ckpt}', mean return {mean:.2f} "
            f"(min {min(returns):.2f}, max {max(returns):.2f})")


@pytest.mark.parametrize('name', sorted(SHORT_RUNS))
def test_collect_demos_records_every_policys_run_folder_and_prints_the_returns(name, short_run, tmp_path, capsys,
                                                                              monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = short_run(name)
    capsys.readouterr()
    assert main(['collect-demos', str(run / 'config.yaml'), '--ckpt', str(run), '--episodes', '2',
                 '-o', 'demos.npz']) == 0
    recorded = load_demos('demos.npz')
    ckpt = run / 'ckpt' / 'best.pt'  # the run folder's best checkpoint, as tidal eval takes it
    assert recorded.metadata['checkpoint'] == str(ckpt) and recorded.metadata['policy'] == name
    assert sorted(recorded.columns) == DEMO_COLUMNS
    ends = torch.tensor(recorded.metadata['episode_lengths']).cumsum(0)
    returns = [float(part.sum()) for part in torch.tensor_split(recorded.columns['reward'], ends[:-1])]
    assert returns == pytest.approx(recorded.metadata['returns'])
    assert (recorded.columns['terminated'] | recorded.columns['truncated']).nonzero().flatten().tolist() == \
        (ends - 1).tolist()  # each episode ends where its last step ends it
    assert capsys.readouterr().out == (f"{returns_line(recorded.metadata['returns'], ckpt)}\n"
                                       f'wrote 2 episodes to demos.npz\n')


@pytest.mark.parametrize('name', sorted(SHORT_RUNS))
def test_stochastic_demos_of_every_policy_keep_the_envs_columns(name, short_run, tmp_path):
    run = short_run(name)
    path = collect_demos(run / 'config.yaml', run / 'ckpt' / 'latest.pt', 1, tmp_path / 'demos.npz',
                         deterministic=False)
    recorded = load_demos(path)
    assert sorted(recorded.columns) == DEMO_COLUMNS and recorded.metadata['deterministic'] is False
    assert torch.equal(recorded.columns['obs'][1:], recorded.columns['next_obs'][:-1])  # raw, not normalised


def test_ppo_demos_go_into_a_minari_dataset(short_run, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv('MINARI_DATASETS_PATH', str(tmp_path / 'minari'))
    run = short_run('ppo')
    capsys.readouterr()
    assert main(['collect-demos', str(run / 'config.yaml'), '--ckpt', str(run), '--episodes', '2',
                 '--format', 'minari', '--dataset-id', 'tidal/CartPole/ppo-v0']) == 0
    dataset = minari.load_dataset('tidal/CartPole/ppo-v0')
    returns = [float(episode.rewards.sum()) for episode in dataset.iterate_episodes()]
    assert returns == dataset.storage.metadata['tidal']['returns'] and len(returns) == 2
    assert capsys.readouterr().out.splitlines()[0] == returns_line(returns, run / 'ckpt' / 'best.pt')
