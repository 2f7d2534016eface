"""Seed groups end to end: each seed of `train(..., seeds=[...])` is the run it would be alone, the group folder,
refusals, a seed that fails stopping alone, kill and resume, and the CLI's --seeds."""
from __future__ import annotations

import json
import os
import signal

import pytest
import torch

from tidal.base.errors import ConfigError, EnvError
from tidal.config import read_config
from tidal.entry.cli import main
from tidal.entry.pipelines import resume, train
from tidal.entry.result import GroupResult
from tidal.entry.run import Run, RunInterrupted
from tidal.entry.setup import load_config
from tidal.entry.seed_group import SeedGroup
from tidal.worker.checkpoint import load_checkpoint
from tidal.worker.seed_stack import SeedStack

from group_runs import assert_same_model, final_model, returns  # tests/entry is on sys.path

STEPS = 2048
IN_ONE = 'seed_group.processes=1'  # the group in this process, where a test patches its methods


@pytest.fixture(scope='module')
def ppo_group(tmp_path_factory):
    """An uninterrupted group of seeds 0 and 1 (shared by the tests that compare with it)."""
    group_dir = tmp_path_factory.mktemp('group') / 'g'
    result = train('cartpole_ppo', seeds=[0, 1], max_env_step=STEPS, progress=False,
                   overrides=[f'exp_name={group_dir}', IN_ONE])
    return result, group_dir


def test_each_seed_of_a_group_is_its_run_alone(ppo_group, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result, group_dir = ppo_group
    alone = train('cartpole_ppo', seed=1, max_env_step=STEPS, progress=False, overrides=['exp_name=alone'])
    seed_1 = group_dir / 'seed_1'
    assert len(returns(seed_1)) == 3  # env steps 0, 1024, 2048
    assert returns(seed_1) == returns(alone.run_dir)
    assert_same_model(final_model(seed_1), final_model(alone.run_dir), 1e-4)
    # seed 0 is another run
    assert returns(group_dir / 'seed_0') != returns(seed_1)
    # the group stepped CartPole as arrays, its run alone with gymnasium's envs: the same returns
    assert load_config(read_config(str(seed_1 / 'config.yaml'))).env_manager.type == 'numpy'
    assert load_config(read_config(str(alone.run_dir / 'config.yaml'))).env_manager.type == 'base'

    # the result and the folder
    assert isinstance(result, GroupResult) and result.group_dir == group_dir
    assert [run.run_dir.name for run in result.runs] == ['seed_0', 'seed_1']
    assert json.loads((group_dir / 'group.json').read_text())['seeds'] == [0, 1]
    for seed in (0, 1):
        run_dir = group_dir / f'seed_{seed}'
        for name in ('config.yaml', 'evals.csv', 'summary.json', 'ckpt/latest.pt'):
            assert (run_dir / name).is_file(), (seed, name)
        assert f'seed: {seed}' in (run_dir / 'config.yaml').read_text()
        own = json.loads((run_dir / 'summary.json').read_text())
        assert own['env_step'] == STEPS and own['outcome'].startswith('budget')
    assert (group_dir / 'aggregate' / 'curve.png').is_file()
    summary = json.loads((group_dir / 'aggregate' / 'summary.json').read_text())
    assert [entry['seed'] for entry in summary['seeds']] == [0, 1]
    lasts = []
    for entry in summary['seeds']:
        run_dir = group_dir / entry['run_dir']
        assert entry['run_dir'] == f"seed_{entry['seed']}"
        assert entry['env_step'] == STEPS and entry['train_iter'] == 160  # 4 rollouts x 40 updates
        assert entry['last_return'] == returns(run_dir)[-1]
        assert entry['best_return'] == max(returns(run_dir))
        lasts.append(entry['last_return'])
    assert summary['last_return_median'] == pytest.approx(sum(lasts) / 2)
    assert summary['last_return_iqm'] == pytest.approx(sum(lasts) / 2)
    low, high = summary['last_return_iqm_ci95']
    assert min(lasts) - 1e-9 <= low <= high <= max(lasts) + 1e-9
    assert summary['env_steps_per_s'] == pytest.approx(2 * STEPS / summary['wall_time'])


def test_ppg_group_with_aux_phase_equals_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # n_sample 512: a rollout per 512 env steps, so interval 2 makes an aux phase at 1024 and at 2048
    overrides = ['policy.aux.interval=2']
    train('cartpole_ppg', seeds=[0, 1], max_env_step=STEPS, progress=False, overrides=[*overrides, 'exp_name=g'])
    alone = train('cartpole_ppg', seed=1, max_env_step=STEPS, progress=False, overrides=[*overrides, 'exp_name=a'])
    seed_1 = tmp_path / 'g' / 'seed_1'
    assert 'aux_total_loss' in (seed_1 / 'log.txt').read_text()
    assert 'aux_total_loss' in (alone.run_dir / 'log.txt').read_text()
    assert returns(seed_1) == returns(alone.run_dir)
    assert_same_model(final_model(seed_1), final_model(alone.run_dir), 1e-4)


def one_line_config_error(call):
    with pytest.raises(ConfigError) as info:
        call()
    message = str(info.value)
    assert '\n' not in message
    return message


def test_refusals(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    message = one_line_config_error(
        lambda: train('cartpole_muzero', seeds=[0, 1], max_env_step=5000, progress=False, overrides=['exp_name=sac']))
    assert "'muzero'" in message and 'seeds' in message and '_learn_plan' in message
    assert not (tmp_path / 'sac').exists()  # a refused group leaves no folder
    message = one_line_config_error(
        lambda: train('pendulum_sac', seeds=[0, 1], max_env_step=2000, progress=False,
                      overrides=['exp_name=sac', 'policy.priority=True']))
    assert "'sac'" in message and 'policy.priority' in message
    assert not (tmp_path / 'sac').exists()
    message = one_line_config_error(
        lambda: train('cartpole_ppo', seeds=[1, 1], max_env_step=1024, progress=False, overrides=['exp_name=x']))
    assert 'twice' in message and '[1, 1]' in message
    message = one_line_config_error(
        lambda: train('cartpole_ppo', seed=3, seeds=[0, 1], max_env_step=1024, progress=False,
                      overrides=['exp_name=x']))
    assert 'seed' in message and 'seeds' in message
    assert not (tmp_path / 'x').exists()
    capsys.readouterr()
    code = main(['train', 'cartpole_ppo', '--seeds', '0,0', '--max-env-step', '1024', '--no-progress',
                 '--exp-name', 'cli'])
    assert code != 0
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'twice' in err and 'Traceback' not in err
    assert not (tmp_path / 'cli').exists()


def test_a_diverging_seed_stops_alone(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    original, calls = SeedGroup._update, []

    def update(self):
        original(self)
        calls.append(1)
        if len(calls) == 2:  # after the second round's updates, seed 1's weights go NaN
            key = next(key for key in self.stack.tensors if key.endswith('weight'))
            self.stack.tensors[key][1].fill_(float('nan'))
    monkeypatch.setattr(SeedGroup, '_update', update)
    result = train('cartpole_ppo', seeds=[0, 1], max_env_step=STEPS, progress=False, overrides=['exp_name=g', IN_ONE])
    group_dir = tmp_path / 'g'
    seed_0 = json.loads((group_dir / 'seed_0' / 'summary.json').read_text())
    seed_1 = json.loads((group_dir / 'seed_1' / 'summary.json').read_text())
    assert seed_0['env_step'] == STEPS and seed_0['outcome'].startswith('budget')
    assert seed_1['outcome'].startswith('stopped'), seed_1['outcome']
    assert seed_1['env_step'] < STEPS
    err_lines = capsys.readouterr().err.splitlines()
    assert sum(line.startswith('tidal: seed 1 stopped:') for line in err_lines) == 1
    assert not any(line.startswith('tidal: seed 0 stopped') for line in err_lines)
    # seed 0's weights are finite and were not touched by seed 1's NaN
    assert all(torch.isfinite(value).all() for value in final_model(group_dir / 'seed_0').values())
    summary = json.loads((group_dir / 'aggregate' / 'summary.json').read_text())
    assert [entry['seed'] for entry in summary['seeds']] == [0, 1]
    assert summary['seeds'][0]['env_step'] == STEPS
    assert isinstance(result, GroupResult)


def test_kill_and_resume_is_exact(ppo_group, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _, reference = ppo_group
    original, calls = Run.feed_step, []

    def feed_step(self):
        calls.append(1)
        if len(calls) == 3:  # seed 0's second feed step
            os.kill(os.getpid(), signal.SIGTERM)
        return original(self)
    monkeypatch.setattr(Run, 'feed_step', feed_step)
    with pytest.raises(RunInterrupted):
        train('cartpole_ppo', seeds=[0, 1], max_env_step=STEPS, progress=False, overrides=['exp_name=g', IN_ONE])
    monkeypatch.setattr(Run, 'feed_step', original)
    group_dir = tmp_path / 'g'
    for seed in (0, 1):
        state = load_checkpoint(group_dir / f'seed_{seed}' / 'ckpt' / 'latest.pt')
        assert not state['finished'] and 0 < state['collector']['env_step'] < STEPS
    result = resume(group_dir)
    assert isinstance(result, GroupResult)
    for seed in (0, 1):
        run_dir = group_dir / f'seed_{seed}'
        assert returns(run_dir) == returns(reference / f'seed_{seed}')
        assert_same_model(final_model(run_dir), final_model(reference / f'seed_{seed}'), 1e-6)
        assert json.loads((run_dir / 'summary.json').read_text())['env_step'] == STEPS
    assert resume(group_dir) is None  # the group ended


def test_cli_seeds_count_and_list(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    common = ['--max-env-step', '1024', '--no-progress']
    assert main(['train', 'cartpole_ppo', '-s', '5', '--seeds', '2', *common, '--exp-name', 'g']) == 0
    assert sorted(path.name for path in (tmp_path / 'g').glob('seed_*')) == ['seed_5', 'seed_6']
    assert json.loads((tmp_path / 'g' / 'group.json').read_text())['seeds'] == [5, 6]
    assert 'seed: 6' in (tmp_path / 'g' / 'seed_6' / 'config.yaml').read_text()
    assert main(['train', 'cartpole_ppo', '--seeds', '3,7', *common, '--exp-name', 'h']) == 0
    assert sorted(path.name for path in (tmp_path / 'h').glob('seed_*')) == ['seed_3', 'seed_7']
    summary = json.loads((tmp_path / 'h' / 'aggregate' / 'summary.json').read_text())
    assert [entry['seed'] for entry in summary['seeds']] == [3, 7]


def test_sac_group_with_reward_normalization_keeps_each_seeds_statistics_as_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    overrides = ['policy.normalize.reward=true', 'policy.normalize.clip=1.0', 'policy.random_collect_size=100',
                 'policy.learn.batch_size=16', 'policy.model.actor_hidden_sizes=[16]',
                 'policy.model.critic_hidden_sizes=[16]', 'env.n_evaluator_episode=1', 'env.stop_value=null',
                 'env.env_kwargs.max_episode_steps=50']
    train('pendulum_sac', seeds=[0, 1], max_env_step=300, progress=False, overrides=[*overrides, 'exp_name=g'])
    alone = train('pendulum_sac', seed=1, max_env_step=300, progress=False, overrides=[*overrides, 'exp_name=a'])
    stats = {name: load_checkpoint(path / 'ckpt' / 'latest.pt')['policy']['reward_rms']
             for name, path in (('seed_0', tmp_path / 'g' / 'seed_0'), ('seed_1', tmp_path / 'g' / 'seed_1'),
                                ('alone', alone.run_dir))}
    for key in ('mean', 'var', 'count'):
        assert torch.allclose(stats['seed_1'][key], stats['alone'][key], rtol=1e-6), key
    assert stats['seed_0']['count'] == stats['seed_1']['count']  # 300 env steps each
    assert not torch.allclose(stats['seed_0']['mean'], stats['seed_1']['mean'])  # a seed's own rewards
    assert_same_model(final_model(tmp_path / 'g' / 'seed_1'), final_model(alone.run_dir), 1e-4)


def test_sqil_with_its_gradient_monitor_is_refused_naming_the_key():
    from tidal.entry.pipelines import run_feed
    from tidal.entry.seed_group import check_groupable
    from tidal.entry.setup import load_config
    cfg = load_config('pendulum_sqil_sac')
    with pytest.raises(ConfigError, match=r"policy 'sqil_sac' .*policy\.learn\.monitor_cos_similarity"):
        check_groupable(cfg, run_feed(cfg))
    quiet = load_config('pendulum_sqil_sac', overrides=['policy.learn.monitor_cos_similarity=False'])
    check_groupable(quiet, run_feed(quiet))  # no refusal


@pytest.mark.parametrize('committed', [True, False])
def test_a_round_of_checkpoints_is_kept_all_or_none(tmp_path, committed):
    """A kill while the seeds staged their checkpoints keeps the previous round's; a kill while the staged ones
    replaced the latest (the commit file written) completes the round."""
    from tidal.entry.seed_group import COMMIT_PREFIX, STAGED, recover_checkpoints
    marker = tmp_path / f'{COMMIT_PREFIX}.0.json'
    run_dirs = [tmp_path / f'seed_{seed}' for seed in (0, 1)]
    for run_dir in run_dirs:
        (run_dir / 'ckpt').mkdir(parents=True)
        (run_dir / 'ckpt' / 'latest.pt').write_text('round 1')
    (run_dirs[0] / 'ckpt' / STAGED).write_text('round 2')  # seed 1's was replaced already, or never staged
    if committed:
        (run_dirs[1] / 'ckpt' / 'latest.pt').write_text('round 2')
        marker.write_text('["seed_0", "seed_1"]\n')
    recover_checkpoints(tmp_path, run_dirs)
    expected = 'round 2' if committed else 'round 1'
    assert [(run_dir / 'ckpt' / 'latest.pt').read_text() for run_dir in run_dirs] == [expected, expected]
    assert not any((run_dir / 'ckpt' / STAGED).exists() for run_dir in run_dirs)
    assert not marker.exists()


def test_seed_0_reaching_the_stop_value_first_leaves_the_others_training(tmp_path, monkeypatch, capsys):
    """Seed 0 ends at its first evaluation (the stop value is set under its return there); seed 1 trains on to its
    budget through a kill and a resume, the stacked update led by seed 1's modules."""
    monkeypatch.chdir(tmp_path)
    original, calls = Run.feed_step, []

    def feed_step(self):
        calls.append(1)
        if len(calls) == 3:  # seed 1's third feed step: seed 0 has ended
            os.kill(os.getpid(), signal.SIGTERM)
        return original(self)
    monkeypatch.setattr(Run, 'feed_step', feed_step)
    overrides = ['exp_name=g', 'env.stop_value=330', IN_ONE]  # seed 0 evaluates 338 before training, seed 1 301.8
    with pytest.raises(RunInterrupted):
        train('cartpole_ppo', seeds=[0, 1], max_env_step=STEPS, progress=False, overrides=overrides)
    monkeypatch.setattr(Run, 'feed_step', original)
    group_dir = tmp_path / 'g'
    assert load_checkpoint(group_dir / 'seed_0' / 'ckpt' / 'latest.pt')['finished'].startswith('stop value')
    assert not load_checkpoint(group_dir / 'seed_1' / 'ckpt' / 'latest.pt')['finished']
    assert isinstance(resume(group_dir, progress=False), GroupResult)
    seed_0 = json.loads((group_dir / 'seed_0' / 'summary.json').read_text())
    seed_1 = json.loads((group_dir / 'seed_1' / 'summary.json').read_text())
    assert seed_0['outcome'] == 'stop value 330 reached' and seed_0['env_step'] == 0
    assert seed_1['outcome'].startswith('budget') and seed_1['env_step'] == STEPS
    assert returns(group_dir / 'seed_1')[-1] != returns(group_dir / 'seed_1')[0]  # it trained
    for seed in (0, 1):
        for name in ('config.yaml', 'evals.csv', 'summary.json', 'ckpt/latest.pt', 'curve.png'):
            assert (group_dir / f'seed_{seed}' / name).is_file(), (seed, name)
    out = capsys.readouterr().out
    assert out.count('run ended (stop value 330 reached)') == 1
    summary = json.loads((group_dir / 'aggregate' / 'summary.json').read_text())
    assert [entry['seed'] for entry in summary['seeds']] == [0, 1]  # the seed that had ended counts too
    assert [entry['last_return'] for entry in summary['seeds']] == [returns(group_dir / f'seed_{seed}')[-1]
                                                                   for seed in (0, 1)]
    assert out.splitlines()[-1] == (f"tidal: group of 2 seeds ended; last eval return median "
                                    f"{summary['last_return_median']:.2f}, IQM {summary['last_return_iqm']:.2f}; "
                                    f"group folder {group_dir} ({group_dir / 'aggregate' / 'curve.png'}, "
                                    f"{group_dir / 'aggregate' / 'summary.json'})")


def test_a_seed_that_ends_leaves_the_stack_and_the_others_run_as_alone(tmp_path, monkeypatch):
    """Seed 0 reaches the stop value at its first evaluation: the stack is rebuilt of seed 1 alone, whose
    collections, updates and evaluations then go on as in its run alone."""
    monkeypatch.chdir(tmp_path)
    sizes, original = [], SeedStack.__init__

    def init(self, policies):
        sizes.append(len(policies))
        original(self, policies)
    monkeypatch.setattr(SeedStack, '__init__', init)
    overrides = ['env.stop_value=330']  # seed 0 evaluates 338 before training, seed 1 301.8
    train('cartpole_ppo', seeds=[0, 1], max_env_step=1024, progress=False, overrides=[*overrides, 'exp_name=g', IN_ONE])
    assert sizes == [2, 1]
    alone = train('cartpole_ppo', seed=1, max_env_step=1024, progress=False, overrides=[*overrides, 'exp_name=a'])
    assert returns(tmp_path / 'g' / 'seed_1') == returns(alone.run_dir)
    assert_same_model(final_model(tmp_path / 'g' / 'seed_1'), final_model(alone.run_dir), 1e-5)


def test_a_seed_whose_env_fails_in_a_shared_collection_stops_alone(tmp_path, monkeypatch, capsys):
    """Seed 0's env breaks halfway through a collection made for both seeds: seed 0 stops with its env's error,
    the stack is rebuilt of seed 1, and seed 1 gets its own sample and trains on as in its run alone."""
    monkeypatch.chdir(tmp_path)
    original, calls = SeedGroup._collect_together, []

    def collect_together(self):
        calls.append(1)
        if len(calls) == 2:
            env, steps = self.stacked[0].run.collector.env, []
            own_step = env.step

            def step(actions):
                steps.append(1)
                if len(steps) == 30:
                    raise EnvError("env 'CartPole-v1' (collector envs) broke")
                return own_step(actions)
            env.step = step
        original(self)
    monkeypatch.setattr(SeedGroup, '_collect_together', collect_together)
    train('cartpole_ppo', seeds=[0, 1], max_env_step=STEPS, progress=False, overrides=['exp_name=g', IN_ONE])
    monkeypatch.setattr(SeedGroup, '_collect_together', original)
    seed_0 = json.loads((tmp_path / 'g' / 'seed_0' / 'summary.json').read_text())
    assert seed_0['outcome'] == "stopped: env 'CartPole-v1' (collector envs) broke"
    assert 'tidal: seed 0 stopped:' in capsys.readouterr().err
    alone = train('cartpole_ppo', seed=1, max_env_step=STEPS, progress=False, overrides=['exp_name=a'])
    assert returns(tmp_path / 'g' / 'seed_1') == returns(alone.run_dir)
    assert_same_model(final_model(tmp_path / 'g' / 'seed_1'), final_model(alone.run_dir), 1e-4)
