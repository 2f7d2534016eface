"""Offline runs end to end, from the CLI: a run's saved replay, a demonstration file and a Minari dataset as the
dataset; every offline policy's zoo config; the budget and the logs in train iterations; an exact resume; the
normalised score; and the one-line refusals of bad datasets and budgets."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import torch

from tidal.entry.cli import main
from tidal.worker.checkpoint import load_checkpoint
from tidal.worker.demos import save_demos
from tidal.worker.offline_data import next_actions, replay_episodes

ACTOR = ['--set', 'policy.model.actor_hidden_sizes=[16]', '--set', 'policy.learn.batch_size=16',
         '--set', 'env.n_evaluator_episode=1', '--set', 'env.evaluator_env_num=1', '--no-progress']
SMALL = [*ACTOR, '--set', 'policy.model.critic_hidden_sizes=[16]']
ACTOR_OFFLINE = [*ACTOR, '--set', 'policy.eval.evaluator.eval_freq=20', '--set', 'policy.learn.learner.log_freq=10']
OFFLINE = [*ACTOR_OFFLINE, '--set', 'policy.model.critic_hidden_sizes=[16]']


@pytest.fixture(scope='module')
def source(tmp_path_factory):
    """A SAC run of 300 Pendulum steps (its replay is a dataset), in a folder the tests of this module share."""
    folder = tmp_path_factory.mktemp('offline')
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        assert main(['train', 'pendulum_sac', '--max-env-step', '300', '--exp-name', 'source',
                     '--set', 'policy.random_collect_size=200', *SMALL]) == 0
    return folder


@pytest.fixture
def folder(source, tmp_path, monkeypatch):
    """A fresh folder holding a link to the source run, with Minari's root inside it."""
    (tmp_path / 'source').symlink_to(source / 'source')
    monkeypatch.setenv('MINARI_DATASETS_PATH', str(tmp_path / 'minari'))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def evals(run: Path) -> list[dict[str, str]]:
    with open(run / 'evals.csv', newline='') as f:
        return list(csv.DictReader(f))


def test_td3_bc_learns_from_a_runs_replay_counting_train_iterations(folder, capsys):
    assert main(['train', 'pendulum_td3_bc', '--max-train-iter', '60', '--exp-name', 'run',
                 '--set', 'policy.collect.data_path=source', *OFFLINE]) == 0
    out = capsys.readouterr().out
    assert "learning offline from 'source', no collector" in out
    assert 'run ended (budget of 60 train iterations reached) at train iteration 60;' in out
    summary = json.loads((folder / 'run' / 'summary.json').read_text())
    assert summary['env_step'] == 0 and summary['train_iter'] == 60
    rows = evals(folder / 'run')
    assert [row['train_iter'] for row in rows] == ['0', '20', '40', '60'] and {row['env_step'] for row in rows} == {'0'}
    log = (folder / 'run' / 'log.txt').read_text()
    assert 'train @ iter 10: critic_loss=' in log and 'bc_loss=' in log and 'lambda=' in log
    from tidal.worker.plot import curve_figure
    axes = curve_figure([folder / 'run']).axes[0]  # drawn against train iterations, as its evaluations ran
    assert axes.get_xlabel() == 'train iterations' and list(axes.lines[0].get_xdata()) == [0, 20, 40, 60]
    # the observation statistics are the dataset's (the replay's 300 transitions), saved with the policy
    replay = load_checkpoint(folder / 'source' / 'ckpt' / 'latest.pt')['feed']['buffer']['columns']['obs']
    saved = load_checkpoint(folder / 'run' / 'ckpt' / 'latest.pt')['policy']['obs_rms']
    assert torch.allclose(saved['mean'], replay.double().mean(0)) and float(saved['count']) == 300
    assert torch.allclose(saved['var'], replay.double().var(0, unbiased=False))


@pytest.mark.parametrize('algo', ['bc', 'iql', 'cql', 'rebrac'])
def test_each_offline_zoo_config_trains_from_a_replay(folder, algo):
    offline = ACTOR_OFFLINE if algo == 'bc' else OFFLINE  # behaviour cloning has no critics
    assert main(['train', f'pendulum_{algo}', '--max-train-iter', '30', '--exp-name', algo,
                 '--set', 'policy.collect.data_path=source', *offline]) == 0
    assert json.loads((folder / algo / 'summary.json').read_text())['train_iter'] == 30


def test_a_resumed_offline_run_ends_where_the_uninterrupted_one_does(folder):
    common = ['pendulum_iql', '--set', 'policy.collect.data_path=source', *OFFLINE]
    assert main(['train', *common, '--max-train-iter', '80', '--exp-name', 'straight']) == 0
    assert main(['train', *common, '--max-train-iter', '40', '--exp-name', 'halves']) == 0
    assert main(['resume', 'halves', '--max-train-iter', '80', '--no-progress']) == 0
    straight = load_checkpoint(folder / 'straight' / 'ckpt' / 'latest.pt')['policy']
    halves = load_checkpoint(folder / 'halves' / 'ckpt' / 'latest.pt')['policy']
    for key in ('model', 'optimizer_policy', 'target_critic'):
        flat_straight, flat_halves = _tensors(straight[key]), _tensors(halves[key])
        assert all(torch.equal(a, b) for a, b in zip(flat_straight, flat_halves)) and flat_straight, key
    assert [row['return_mean'] for row in evals(folder / 'straight')] == \
        [row['return_mean'] for row in evals(folder / 'halves')]


def _tensors(tree):
    if isinstance(tree, torch.Tensor):
        return [tree]
    if isinstance(tree, dict):
        return [t for value in tree.values() for t in _tensors(value)]
    if isinstance(tree, (list, tuple)):
        return [t for value in tree for t in _tensors(value)]
    return []


def test_a_demonstration_file_and_a_minari_dataset_with_reference_returns(folder):
    episodes = replay_episodes(folder / 'source' / 'ckpt' / 'latest.pt', 1)
    assert sum(len(episode['reward']) for episode in episodes) == 300
    assert [bool(episode['truncated'][-1]) for episode in episodes] == [True, True]  # 200 steps, then 100 running
    save_demos('demos.npz', episodes, dict(env_id='Pendulum-v1', obs_shape=3, action_shape=1,
                                           episode_lengths=[len(e['reward']) for e in episodes]))
    assert main(['train', 'pendulum_bc', '--max-train-iter', '20', '--exp-name', 'from_npz',
                 '--set', 'policy.collect.data_path=demos.npz', *ACTOR_OFFLINE]) == 0
    from tidal.worker.minari_datasets import save_episodes
    from tidal.entry.setup import load_config
    save_episodes('tidal/pendulum/test-v0', episodes, load_config('pendulum_bc').env, (-1500.0, -150.0), 'a test')
    assert main(['train', 'pendulum_td3_bc', '--max-train-iter', '20', '--exp-name', 'from_minari',
                 '--set', 'policy.collect.data_path=tidal/pendulum/test-v0', *OFFLINE]) == 0
    rows = evals(folder / 'from_minari')
    score = [100 * (float(row['return_mean']) + 1500) / 1350 for row in rows]
    assert [float(row['normalized_return_mean']) for row in rows] == pytest.approx(score)
    # the config's reference returns win over the dataset's
    assert main(['train', 'pendulum_td3_bc', '--max-train-iter', '20', '--exp-name', 'own_refs',
                 '--set', 'policy.collect.data_path=tidal/pendulum/test-v0', '--set', 'policy.eval.ref_min_score=-1000',
                 '--set', 'policy.eval.ref_max_score=0', *OFFLINE]) == 0
    row = evals(folder / 'own_refs')[0]
    assert float(row['normalized_return_mean']) == pytest.approx(100 * (float(row['return_mean']) + 1000) / 1000)


@pytest.mark.parametrize('args, message', [
    (['--max-env-step', '100'], "policy 'td3_bc' learns offline and steps no env: give its budget in train iterations "
                                "(max_train_iter, --max-train-iter), not max_env_step"),
    (['--max-train-iter', '5', '--set', 'policy.collect.data_path='],
     "policy 'td3_bc' learns offline: set policy.collect.data_path to a Minari dataset id or folder, a demonstration "
     "file (.npz) or a tidal run folder whose replay it learns from"),
    (['--max-train-iter', '5', '--set', 'policy.collect.data_path=tidal/pendulum/absent-v0'],
     "policy.collect.data_path: 'tidal/pendulum/absent-v0' is neither a demonstration file (.npz), a Minari dataset "
     "folder nor a Minari dataset id under Minari's root '{root}' (MINARI_DATASETS_PATH): download a Minari dataset "
     "with minari download ID, or build a D4RL-like suite of your own with tidal build-datasets"),
    (['--max-train-iter', '5', '--set', 'policy.eval.ref_min_score=0'],
     'policy.eval.ref_min_score and policy.eval.ref_max_score give a normalised score together: set both or neither'),
    ([], 'nothing would end this offline run: give max_train_iter (--max-train-iter), policy.learn.train_epoch or a '
         'finite env.stop_value'),
    (['--max-train-iter', '5', '--set', 'policy.collect.reward_norm=iql'],
     "policy.collect.reward_norm is 'iql': one of 'none' (rewards as recorded), 'return_range' (rewards times 1000 / "
     "(best - worst return of the dataset's whole episodes), IQL's and CORL's scaling for locomotion), 'standardize' "
     "(rewards less their mean, over their standard deviation)"),
    (['--set', 'policy.learn.train_epoch=0'],
     "config key 'policy.learn.train_epoch' must be >= 1 or None, got 0"),
])
def test_bad_offline_runs_are_refused_in_one_line(folder, capsys, args, message):
    assert main(['train', 'pendulum_td3_bc', '--exp-name', 'bad', '--set', 'policy.collect.data_path=source', *args,
                 *SMALL]) == 2
    err = capsys.readouterr().err
    assert err == f"tidal: error: {message.format(root=folder / 'minari')}\n"
    assert not (folder / 'bad').exists()


def test_a_replay_of_another_env_is_refused(folder, capsys):
    assert main(['train', 'pendulum_td3_bc', '--max-train-iter', '5', '--exp-name', 'bad', '--set',
                 'policy.collect.data_path=source', '--set', 'env.env_id=MountainCarContinuous-v0', *SMALL]) == 2
    assert capsys.readouterr().err == (
        "tidal: error: policy.collect.data_path: the replay in 'source/ckpt/latest.pt' comes from a run on env "
        "'Pendulum-v1', but env.env_id is 'MountainCarContinuous-v0'\n")


def test_build_datasets_makes_the_five_levels_with_reference_returns_and_bc_learns_one(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv('MINARI_DATASETS_PATH', str(tmp_path / 'minari'))
    monkeypatch.chdir(tmp_path)
    import minari
    assert main(['build-datasets', 'cartpole_dqn', '--max-env-step', '3000', '--transitions', '300', '--no-progress',
                 '--set', 'policy.eval.evaluator.eval_freq=50', '--set', 'env.n_evaluator_episode=2',
                 '--set', 'env.evaluator_env_num=2']) == 0
    out = capsys.readouterr().out
    expert = [json.loads((tmp_path / 'tidal_cartpole_runs' / run / 'summary.json').read_text())
              for run in ('expert', 'medium')]
    assert expert[1]['env_step'] < expert[0]['env_step']  # the medium run stopped early, at its stop value
    random_line = next(line for line in out.splitlines() if line.startswith('tidal: tidal/cartpole/random-v0:'))
    low = float(random_line.split('mean return ')[1].split(' ')[0])
    high = float(evals(tmp_path / 'tidal_cartpole_runs' / 'expert')[-1]['return_mean'])
    for level in ('random', 'medium', 'medium-replay', 'expert', 'medium-expert'):
        dataset = minari.load_dataset(f'tidal/cartpole/{level}-v0')
        metadata = dataset.storage.metadata
        assert metadata['ref_min_score'] == pytest.approx(low) and metadata['ref_max_score'] == pytest.approx(high)
        assert dataset.spec.env_spec.max_episode_steps == 500
        if level != 'medium-replay':
            assert dataset.total_steps >= 300
    # the medium run's replay, all of it: 8 envs' rows cut into their episodes
    replay = minari.load_dataset('tidal/cartpole/medium-replay-v0')
    assert replay.total_steps == expert[1]['env_step']
    medium_target = low + (high - low) / 3
    assert float(evals(tmp_path / 'tidal_cartpole_runs' / 'medium')[-1]['return_mean']) >= medium_target
    (tmp_path / 'cartpole_bc.yaml').write_text(
        'main_config:\n'
        '  exp_name: cartpole_bc\n'
        '  env: {env_id: CartPole-v1, evaluator_env_num: 1, n_evaluator_episode: 1}\n'
        '  policy:\n'
        '    continuous: false\n'
        '    collect: {data_path: tidal/cartpole/medium-v0}\n'
        '    eval: {evaluator: {eval_freq: 10}}\n'
        'create_config:\n'
        '  env: {type: gym}\n'
        '  policy: {type: bc}\n')
    assert main(['train', 'cartpole_bc.yaml', '--max-train-iter', '20', '--no-progress']) == 0
    rows = evals(tmp_path / 'cartpole_bc')
    assert [row['train_iter'] for row in rows] == ['0', '10', '20']
    assert float(rows[-1]['normalized_return_mean']) == pytest.approx(
        100 * (float(rows[-1]['return_mean']) - low) / (high - low))


def test_the_ding_command_form_runs_offline_configs_and_names_the_right_mode(folder, capsys):
    assert main(['-m', 'serial_offline', '-c', 'pendulum_td3_bc', '--train-iter', '20', '--set',
                 'policy.collect.data_path=source', '--set', 'exp_name=ding_form', *OFFLINE]) == 0
    assert json.loads((folder / 'ding_form' / 'summary.json').read_text())['train_iter'] == 20
    capsys.readouterr()
    assert main(['-m', 'serial', '-c', 'pendulum_td3_bc', '--train-iter', '20']) == 2
    assert capsys.readouterr().err == ("tidal: error: policy 'td3_bc' learns offline from a dataset; train it with "
                                       "tidal -m serial_offline (or tidal train, which picks the pipeline itself)\n")
    assert main(['-m', 'serial_bc', '-c', 'pendulum_sac', '--train-iter', '20']) == 2
    assert capsys.readouterr().err == ("tidal: error: policy 'sac' learns off-policy; train it with tidal -m serial "
                                       "(or tidal train, which picks the pipeline itself)\n")


def test_the_next_action_is_the_following_rows_within_an_episode_and_the_rows_own_at_its_end():
    action = torch.tensor([[0.1], [0.2], [0.3], [0.4], [0.5]])
    terminated = torch.tensor([False, True, False, False, False])
    truncated = torch.tensor([False, False, False, True, False])
    assert next_actions(action, terminated, truncated).flatten().tolist() == pytest.approx([0.2, 0.2, 0.4, 0.4, 0.5])


def test_iql_goes_on_online_from_its_offline_checkpoint_with_the_dataset_in_its_replay(folder, monkeypatch, capsys):
    assert main(['train', 'pendulum_iql', '--max-train-iter', '30', '--exp-name', 'pendulum_iql',
                 '--set', 'policy.collect.data_path=source', *OFFLINE]) == 0
    offline = load_checkpoint(folder / 'pendulum_iql' / 'ckpt' / 'latest.pt')['policy']
    from tidal.worker.learner import Learner
    first: dict = {}
    train = Learner.train

    def record_first(learner, batch):
        if 'state' not in first:  # copies: the update changes the tensors in place
            first['state'] = {key: [t.clone() for t in _tensors(value)] for key, value in learner.policy.state_dict().items()}
        return train(learner, batch)

    monkeypatch.setattr(Learner, 'train', record_first)
    assert main(['train', 'pendulum_iql_online', '--max-env-step', '120', '--exp-name', 'online',
                 '--set', 'policy.collect.data_path=source', *OFFLINE]) == 0
    for key in ('model', 'obs_rms', 'target_critic'):  # the offline run's networks and statistics, before any update
        assert all(torch.equal(a, b) for a, b in zip(first['state'][key], _tensors(offline[key]))), key
    state = load_checkpoint(folder / 'online' / 'ckpt' / 'latest.pt')
    assert state['feed']['buffer']['size'] == 300 + 120  # the dataset, then the online transitions
    assert json.loads((folder / 'online' / 'summary.json').read_text())['env_step'] == 120
    capsys.readouterr()
    assert main(['train', 'pendulum_iql_online', '--max-env-step', '120', '--exp-name', 'bad', '--set',
                 'policy.learn.init_checkpoint=', '--set', 'policy.collect.data_path=source', *OFFLINE]) == 2
    assert capsys.readouterr().err == ("tidal: error: policy 'iql_online' goes on from an offline run: set "
                                       "policy.learn.init_checkpoint to its run folder or checkpoint\n")


def test_offline_nstep_windows_stay_inside_the_datasets_episodes(tmp_path):
    """policy.nstep offline: each sampled row's window runs over the next rows of its own episode and stops at its
    end (two episodes of 3 and 2 steps, rewards 1 2 3 | 10 20)."""
    from tidal.config.layered import load_layered
    from tidal.worker.builders import build_policy
    from tidal.worker.feeds.offline import OfflineFeed
    rewards = [[1.0, 2.0, 3.0], [10.0, 20.0]]
    episodes = [{'obs': torch.zeros(len(r), 3), 'action': torch.zeros(len(r), 1), 'reward': torch.tensor(r),
                 'next_obs': torch.zeros(len(r), 3), 'terminated': torch.tensor([False] * (len(r) - 1) + [True]),
                 'truncated': torch.zeros(len(r), dtype=torch.bool)} for r in rewards]
    save_demos(tmp_path / 'demos.npz', episodes, dict(env_id='Pendulum-v1', obs_shape=3, action_shape=1,
                                                      episode_lengths=[3, 2]))
    cfg = load_layered('pendulum_td3_bc', 0, [f'policy.collect.data_path={tmp_path / "demos.npz"}', 'policy.nstep=3',
                                              'policy.learn.batch_size=64']).cfg
    batches = []

    class Keep:
        def train(self, batch):
            batches.append(batch)

    feed = OfflineFeed(cfg, build_policy(cfg).views(), None, Keep())
    feed.step(None)
    batch = batches[0]
    windows = {int(index): (row.tolist(), int(length)) for index, row, length in
               zip(batch['index'], batch['nstep_reward'], batch['nstep_len'])}
    expected = {0: ([1.0, 2.0, 3.0], 3), 1: ([2.0, 3.0, 0.0], 2), 2: ([3.0, 0.0, 0.0], 1), 3: ([10.0, 20.0, 0.0], 2),
                4: ([20.0, 0.0, 0.0], 1)}
    assert windows and all(windows[index] == expected[index] for index in windows)
    assert set(windows) == set(expected)  # 64 draws of 5 rows
