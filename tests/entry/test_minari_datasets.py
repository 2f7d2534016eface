"""Minari datasets: `collect-demos --format minari` writes one with Minari's DataCollector, Minari's own
`load_dataset` reads it, and SQIL imitates it, by dataset id or by folder."""
import json

import minari
import numpy as np
import pytest
from easydict import EasyDict

from tidal.entry.cli import main
from tidal.worker.demos import load_demos
from tidal.worker.minari_datasets import load_minari_demos

EVAL = ['--set', 'env.n_evaluator_episode=1', '--set', 'env.evaluator_env_num=1', '--no-progress']
PENDULUM = ['--set', 'policy.model.actor_hidden_sizes=[16]', '--set', 'policy.model.critic_hidden_sizes=[16]',
            '--set', 'policy.learn.batch_size=16', '--set', 'policy.random_collect_size=50', *EVAL]
CARTPOLE_ID = 'tidal/CartPole/expert-v0'


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A fresh folder, and Minari's root inside it: nothing is written to ~/.minari."""
    monkeypatch.setenv('MINARI_DATASETS_PATH', str(tmp_path / 'minari'))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def cartpole_dataset(folder, capsys):
    """A DQN expert of 200 env steps, and 3 of its episodes recorded as the dataset CARTPOLE_ID with seed 3."""
    assert main(['train', 'cartpole_dqn', '--max-env-step', '200', '--exp-name', 'expert', *EVAL]) == 0
    capsys.readouterr()
    assert main(['collect-demos', 'expert/config.yaml', '--ckpt', 'expert/ckpt/latest.pt', '--episodes', '3',
                 '--format', 'minari', '--dataset-id', CARTPOLE_ID, '-s', '3']) == 0
    dataset_dir = folder / 'minari' / 'tidal' / 'CartPole' / 'expert-v0'
    recorded, wrote = capsys.readouterr().out.splitlines()
    assert recorded.startswith("tidal: recorded 3 episodes with 'expert/ckpt/latest.pt', mean return ")
    assert wrote == f'wrote 3 episodes to {dataset_dir} (Minari dataset {CARTPOLE_ID})'
    return folder


def test_collect_demos_writes_a_minari_dataset_that_minari_loads(cartpole_dataset):
    dataset = minari.load_dataset(CARTPOLE_ID)
    assert dataset.total_episodes == 3 and dataset.spec.env_spec.id == 'CartPole-v1'
    metadata = dataset.storage.metadata
    assert metadata['algorithm_name'] == 'tidal dqn'
    assert {key: metadata['tidal'][key] for key in ('policy', 'checkpoint', 'seed', 'deterministic')} == dict(
        policy='dqn', checkpoint='expert/ckpt/latest.pt', seed=3, deterministic=True)
    episodes = list(dataset.iterate_episodes())
    assert [float(episode.rewards.sum()) for episode in episodes] == metadata['tidal']['returns']

    # the same seed on one env records the same episodes in tidal's own format
    assert main(['collect-demos', 'expert/config.yaml', '--ckpt', 'expert/ckpt/latest.pt', '--episodes', '3',
                 '-o', 'demos.npz', '-s', '3', '--set', 'env.collector_env_num=1']) == 0
    demos = load_demos('demos.npz')
    assert [len(episode) for episode in episodes] == demos.metadata['episode_lengths']
    np.testing.assert_array_equal(np.concatenate([e.observations[:-1] for e in episodes]), demos.columns['obs'])
    np.testing.assert_array_equal(np.concatenate([e.observations[1:] for e in episodes]), demos.columns['next_obs'])
    np.testing.assert_array_equal(np.concatenate([e.actions for e in episodes]), demos.columns['action'])
    np.testing.assert_array_equal(np.concatenate([e.terminations for e in episodes]), demos.columns['terminated'])
    np.testing.assert_array_equal(np.concatenate([e.truncations for e in episodes]), demos.columns['truncated'])


def test_sqil_trains_from_a_minari_dataset_id_and_from_its_folder(cartpole_dataset):
    for name, key, source in (('by_id', 'policy.expert_data_path', CARTPOLE_ID),
                              ('by_folder', 'policy.collect.data_path', 'minari/tidal/CartPole/expert-v0')):
        assert main(['train', 'cartpole_sqil', '--max-env-step', '300', '--exp-name', name,
                     '--set', f'{key}={source}', *EVAL]) == 0
        summary = json.loads((cartpole_dataset / name / 'summary.json').read_text())
        assert summary['env_step'] == 304 and summary['train_iter'] > 100


def test_a_dataset_of_other_spaces_is_refused_naming_both(cartpole_dataset, capsys):
    capsys.readouterr()
    assert main(['train', 'pendulum_sqil_sac', '--max-env-step', '100', '--exp-name', 'bad',
                 '--set', f'policy.expert_data_path={CARTPOLE_ID}', *PENDULUM]) == 2
    assert capsys.readouterr().err == (
        f"tidal: error: policy.expert_data_path: Minari dataset '{CARTPOLE_ID}' has observation space "
        "Box([-4.8 -inf -0.41887903 -inf], [4.8 inf 0.41887903 inf], (4,), float32) and action space Discrete(2), "
        "but env 'Pendulum-v1' (env.env_id) has Box([-1. -1. -8.], [1. 1. 8.], (3,), float32) and "
        "Box(-2.0, 2.0, (1,), float32)\n")


def test_pendulum_dataset_holds_the_env_torques_and_reads_back_as_the_policy_actions(folder):
    assert main(['train', 'pendulum_sac', '--max-env-step', '100', '--exp-name', 'expert', *PENDULUM]) == 0
    for output in (['--format', 'minari', '--dataset-id', 'tidal/Pendulum/expert-v0'], ['-o', 'demos.npz']):
        assert main(['collect-demos', 'expert/config.yaml', '--ckpt', 'expert/ckpt/latest.pt', '--episodes', '1',
                     '--set', 'env.collector_env_num=1', '--set', 'env.env_kwargs={max_episode_steps: 20}',
                     *output]) == 0
    episode, = minari.load_dataset('tidal/Pendulum/expert-v0').iterate_episodes()
    demos = load_demos('demos.npz')
    np.testing.assert_allclose(episode.actions, 2.0 * demos.columns['action'].numpy(), rtol=1e-6)  # torques in [-2, 2]
    assert episode.truncations[-1] and not episode.terminations.any()

    env = EasyDict(type='gym', env_id='Pendulum-v1', env_kwargs={'max_episode_steps': 20})
    read = load_minari_demos('tidal/Pendulum/expert-v0', 'policy.expert_data_path', env)
    assert read.metadata['episode_lengths'] == [20] and read.metadata['policy'] == 'sac'
    for column in ('obs', 'next_obs', 'reward', 'terminated', 'truncated'):
        assert read.columns[column].dtype == demos.columns[column].dtype
        np.testing.assert_array_equal(read.columns[column], demos.columns[column])
    np.testing.assert_allclose(read.columns['action'], demos.columns['action'], atol=1e-6)
    assert read.columns['action'].shape == (20, 1) and read.columns['action'].dtype == demos.columns['action'].dtype


def test_two_demonstration_sources_are_refused(folder, capsys):
    assert main(['train', 'pendulum_sqil_sac', '--max-env-step', '100', '--set', 'policy.expert_data_path=a.npz',
                 '--set', 'policy.collect.data_path=tidal/Pendulum/expert-v0', *PENDULUM]) == 2
    assert capsys.readouterr().err == (
        "tidal: error: policy.expert_data_path 'a.npz' and policy.collect.data_path 'tidal/Pendulum/expert-v0' "
        "name two demonstration sources: set one of them\n")


@pytest.mark.parametrize('args, message', [
    (['--format', 'minari', '--dataset-id', 'expert'],
     "--dataset-id 'expert' is not a Minari dataset id: write it namespace/env/name-vN, e.g. tidal/CartPole/expert-v0"),
    (['--format', 'minari', '--dataset-id', 'tidal/CartPole/expert-v0', '-o', 'd.npz'],
     "--format minari writes the dataset --dataset-id (namespace/env/name-vN) under Minari's root "
     "(MINARI_DATASETS_PATH): give --dataset-id, not -o"),
    (['--dataset-id', 'tidal/CartPole/expert-v0'],
     '--format npz writes the demonstration file -o FILE: give -o (--dataset-id is for --format minari)'),
])
def test_collect_demos_destination_errors_are_one_line(cartpole_dataset, capsys, args, message):
    capsys.readouterr()
    assert main(['collect-demos', 'expert/config.yaml', '--ckpt', 'expert/ckpt/latest.pt', '--episodes', '1',
                 *args]) == 2
    assert capsys.readouterr().err == f'tidal: error: {message}\n'


def test_an_existing_dataset_id_is_not_overwritten(cartpole_dataset, capsys):
    capsys.readouterr()
    assert main(['collect-demos', 'expert/config.yaml', '--ckpt', 'expert/ckpt/latest.pt', '--episodes', '1',
                 '--format', 'minari', '--dataset-id', CARTPOLE_ID]) == 2
    assert capsys.readouterr().err == (
        f"tidal: error: --dataset-id '{CARTPOLE_ID}' exists already under Minari's root "
        f"'{cartpole_dataset / 'minari'}' (MINARI_DATASETS_PATH): give it a new version (-vN)\n")
    assert minari.load_dataset(CARTPOLE_ID).total_episodes == 3
