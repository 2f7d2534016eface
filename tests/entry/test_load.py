"""`tidal.load`: a short trained run of every registered policy loads from its folder and from its checkpoint file
and acts on one observation and on a batch exactly as its own eval mode does (actions in the env's bounds); the
run's observation normalisation and acting state go with it; a bad path or observation is one line."""
from __future__ import annotations

import copy
import functools
import re
import sys
from pathlib import Path
from typing import Any, Callable

import gymnasium
import numpy as np
import pytest
import torch

import tidal
from tidal.base.errors import CheckpointError, TidalError
from tidal.config import read_config, resolve_config_source, save_config
from tidal.entry.agent import ObservationError
from tidal.entry.export import real_observations
from tidal.entry.pipelines import train
from tidal.entry.setup import load_config
from tidal.envs.action_bounds import action_bounds
from tidal.registry import ENV_REGISTRY
from tidal.worker.builders import build_policy
from tidal.worker.checkpoint import load_checkpoint, load_policy_checkpoint, save_checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'policies'))  # the short runs of every policy
from test_devices import SHORT_RUNS, budget, demos, short_run_overrides  # noqa: E402,F401  (demos: a fixture)

COUNTER_ID = 'tidal_test/Counter-v0'  # registered by tests/conftest.py
SHORT_EPISODES = 'env.env_kwargs.max_episode_steps=20'  # Pendulum's evaluations, shortened (its spaces stay)
SHORT_STEPS = 120  # env steps of each run at most: past the off-policy runs' warm-up of 100 random steps
QUICK_START = Path(__file__).resolve().parents[2] / 'docs' / 'quick-start.md'


@pytest.fixture(scope='module')
def short_run(demos, tmp_path_factory) -> Callable[[str], Path]:
    """The run folder of `name`'s short run (SHORT_RUNS), trained on first use into a folder named by its config."""
    folder = tmp_path_factory.mktemp('runs')
    made: dict[str, Path] = {}

    def run(name: str) -> Path:
        if name not in made:
            config, steps, _ = SHORT_RUNS[name]
            extra = [SHORT_EPISODES] if config.startswith('pendulum') else []
            made[name] = train(config, seed=0, **budget(name, min(steps, SHORT_STEPS)), progress=False,
                               overrides=short_run_overrides(name, demos, f'exp_name={folder / config}',
                                                             'env.stop_value=null', *extra)).run_dir
        return made[name]
    return run


@functools.cache
def _saved_config(run: Path) -> Any:
    cfg = load_config(read_config(str(run / 'config.yaml')))
    cfg.env_manager.type = 'base'
    return cfg


def saved_config(run: Path) -> Any:
    """The run's compiled config.yaml (compiled once), its envs stepped in this process."""
    return copy.deepcopy(_saved_config(run))


def observations(run: Path) -> np.ndarray:
    """12 real observations of the run's env (4 envs, 3 steps of random actions), as the env adapter gives them."""
    return np.concatenate([obs for obs, _ in real_observations(saved_config(run))[:3]])


class RunEvalMode:
    """The run's eval mode (policy.eval.deterministic) of a fresh policy loading `checkpoint`, and what the env gets
    from it: its actions mapped as the env adapter maps them."""

    def __init__(self, run: Path, checkpoint: Path) -> None:
        cfg = saved_config(run)
        cfg.policy.eval.deterministic = True
        policy = build_policy(cfg, enable_field=('eval',))
        load_policy_checkpoint(policy, checkpoint)
        self.mode, self.seed = policy.eval_mode, cfg.seed
        env = ENV_REGISTRY.build(cfg.env.type, cfg.env).make('evaluator')
        self.bounds = action_bounds(env)
        env.close()

    def actions(self, batch: Any, fresh: bool = True) -> np.ndarray:
        """The env's actions for `batch`; `fresh`: seeded with the run's seed, from new episodes."""
        if fresh:
            self.mode.seed(self.seed)
            self.mode.reset(None)
        obs = {key: torch.as_tensor(value) for key, value in batch.items()} if isinstance(batch, dict) \
            else torch.as_tensor(batch)
        action = self.mode.forward(obs)['action'].numpy()
        return action if self.bounds is None else self.bounds.env_action(action).astype(np.float32)


@pytest.mark.parametrize('name', sorted(SHORT_RUNS))
def test_a_trained_run_loads_from_its_folder_and_its_checkpoint_and_acts_as_its_eval_mode(name, short_run):
    run = short_run(name)
    batch, seed = observations(run), saved_config(run).seed
    best = run / 'ckpt' / 'best.pt'
    for source, checkpoint in ((run, best if best.is_file() else run / 'ckpt' / 'latest.pt'),
                               (run / 'ckpt' / 'latest.pt', run / 'ckpt' / 'latest.pt')):
        agent, eval_mode = tidal.load(source), RunEvalMode(run, checkpoint)
        assert agent.checkpoint == checkpoint and agent.policy.cfg.type == saved_config(run).policy.type
        actions, expected = agent.act(batch), eval_mode.actions(batch)
        np.testing.assert_array_equal(actions, expected)
        agent.seed(seed)
        one = agent.act(batch[0])
        sampled = agent.act(batch, deterministic=False)
        if np.issubdtype(expected.dtype, np.floating):  # Pendulum's
            assert actions.dtype == np.float32 and actions.shape == (12, 1) and sampled.shape == (12, 1)
            assert isinstance(one, np.ndarray) and one.shape == (1,)
            assert np.abs(actions).max() <= 2.0 and np.abs(sampled).max() <= 2.0  # Pendulum's bounds
            np.testing.assert_array_equal(one, eval_mode.actions(batch[:1])[0])
        else:
            assert actions.dtype == np.int64 and actions.shape == (12,) and sampled.dtype == np.int64
            assert type(one) is int and one == eval_mode.actions(batch[:1])[0] and set(sampled) <= {0, 1}


def test_taacs_trajectory_carries_over_between_calls_of_one_batch_until_reset(short_run):
    run = short_run('taac')
    batch = observations(run)[:4]
    agent = tidal.load(run)
    eval_mode = RunEvalMode(run, agent.checkpoint)
    for cfg in (agent.policy.cfg, eval_mode.mode.cfg):
        cfg.eval.epsilon_greedy = 0.0  # greedy switches: each step depends on the trajectories followed alone
    first = agent.act(batch)
    np.testing.assert_array_equal(first, eval_mode.actions(batch))
    for _ in range(2):  # the trajectories the first call started
        np.testing.assert_array_equal(agent.act(batch), eval_mode.actions(batch, fresh=False))
    agent.reset([1])
    eval_mode.mode.reset([1])
    np.testing.assert_array_equal(agent.act(batch), eval_mode.actions(batch, fresh=False))
    agent.reset()
    np.testing.assert_array_equal(agent.act(batch), first)  # every row from a fresh trajectory, as at first


def test_ppo_acts_on_observations_normalised_by_its_checkpoints_statistics(tmp_path):
    run = train('pendulum_ppo', seed=0, max_env_step=256, progress=False, overrides=[
        'policy.collect.n_sample=128', 'policy.learn.batch_size=64', 'policy.model.encoder_hidden_sizes=[16,16]',
        'env.n_evaluator_episode=1', 'env.evaluator_env_num=1', 'env.stop_value=null', SHORT_EPISODES,
        f'exp_name={tmp_path / "ppo"}']).run_dir
    agent = tidal.load(run)
    stats = load_checkpoint(agent.checkpoint)['policy']['obs_rms']
    mean, var = stats['mean'].numpy(), stats['var'].numpy()
    assert np.abs(mean).max() > 0.1  # statistics the run learned, not the initial ones
    batch = observations(run)
    normalised = np.clip((batch.astype(np.float64) - mean) / np.sqrt(var + 1e-8), -10.0, 10.0).astype(np.float32)
    with torch.no_grad():
        model = agent.policy.model
        on_normalised = model.act(torch.as_tensor(normalised), deterministic=True).numpy()
        on_raw = model.act(torch.as_tensor(batch), deterministic=True).numpy()
    expected = (np.clip(on_normalised, -1.0, 1.0).astype(np.float64) * 2.0).astype(np.float32)  # onto [-2, 2]
    np.testing.assert_array_equal(agent.act(batch), expected)
    np.testing.assert_array_equal(agent.act(batch), RunEvalMode(run, agent.checkpoint).actions(batch))
    assert not np.array_equal(agent.act(batch), (np.clip(on_raw, -1.0, 1.0) * 2.0).astype(np.float32))


def test_dict_observations_with_an_action_mask_act_one_or_a_batch(tmp_path):
    main_config, create_config = resolve_config_source('cartpole_dqn')
    main_config['env'].update(env_id=COUNTER_ID, stop_value=None, env_kwargs={'dict_obs': True, 'terminate_at': 50})
    run = tmp_path / 'counter'
    cfg = load_config((main_config, create_config), 0, [f'exp_name={run}'])
    save_config(cfg, run / 'config.yaml')
    save_checkpoint({'policy': build_policy(cfg, enable_field=('eval',)).weights()}, run / 'ckpt' / 'latest.pt')
    agent = tidal.load(run)
    one = {'observation': np.array([3.0], np.float32), 'action_mask': np.array([1, 0], np.int8)}
    batch = {'observation': np.array([[2.0], [3.0]], np.float32), 'action_mask': np.array([[1, 0], [0, 1]], np.int8)}
    assert agent.act(one) == 0  # the only action the mask allows
    np.testing.assert_array_equal(agent.act(batch), [0, 1])
    np.testing.assert_array_equal(agent.act(batch), RunEvalMode(run, run / 'ckpt' / 'latest.pt').actions(batch))
    with pytest.raises(ObservationError) as raised:
        agent.act({'observation': one['observation']})
    assert str(raised.value) == (f"observation ['observation'] does not fit run '{run}': its env gives dicts of "
                                 "['action_mask', 'observation']")
    with pytest.raises(ObservationError) as raised:
        agent.act({'observation': batch['observation'], 'action_mask': one['action_mask']})
    assert str(raised.value) == (f"observation entries of run '{run}' disagree on the batch: 'observation' (2,), "
                                 "'action_mask' ()")


def test_an_observation_of_the_wrong_shape_is_one_line(short_run):
    run = short_run('sac')
    agent = tidal.load(run)
    for obs, shape in ((np.zeros(4), '(4,)'), (np.zeros((2, 4)), '(2, 4)'), (np.zeros((2, 5, 3)), '(2, 5, 3)')):
        with pytest.raises(ObservationError) as raised:
            agent.act(obs)
        assert str(raised.value) == (f"observation of shape {shape} does not fit run '{run}': its env gives (3,) (one "
                                     'observation) or (N, 3) (a batch)')


def test_a_path_that_is_no_run_is_one_line(tmp_path, short_run):
    with pytest.raises(TidalError) as raised:
        tidal.load(tmp_path / 'nowhere')
    assert str(raised.value) == f"'{tmp_path / 'nowhere'}' is neither a run folder nor a checkpoint file"
    (tmp_path / 'ckpt').mkdir()
    with pytest.raises(TidalError) as raised:
        tidal.load(tmp_path)
    assert str(raised.value) == f"'{tmp_path}' is not a tidal run folder (it has no config.yaml)"
    stray = tmp_path / 'ckpt' / 'latest.pt'
    stray.write_bytes((short_run('dqn') / 'ckpt' / 'latest.pt').read_bytes())
    with pytest.raises(TidalError) as raised:
        tidal.load(stray)
    assert str(raised.value) == (f"no config.yaml in the folders above checkpoint '{stray}': tidal.load needs the "
                                 'run folder it was trained in')
    (tmp_path / 'config.yaml').write_bytes((short_run('dqn') / 'config.yaml').read_bytes())
    stray.unlink()
    with pytest.raises(CheckpointError) as raised:
        tidal.load(tmp_path)
    assert str(raised.value) == f"run folder '{tmp_path}' has no checkpoint (ckpt/best.pt or ckpt/latest.pt)"


def test_loading_leaves_the_callers_random_state_as_it_was(short_run):
    run = short_run('sac')
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    tidal.load(run)
    assert torch.equal(torch.rand(3), expected)


def test_the_quick_starts_example_runs_on_a_cartpole_ppo_run(short_run, monkeypatch):
    run = short_run('ppo')
    assert run.name == 'cartpole_ppo'
    example = re.search(r'```python\n(.*?)```', QUICK_START.read_text(), re.DOTALL)
    assert example and 'tidal.load(' in example.group(1)
    env = gymnasium.make('CartPole-v1')  # the raw env: its float32 observations, its actions 0 or 1
    obs, _ = env.reset(seed=0)
    monkeypatch.chdir(run.parent)
    namespace: dict[str, Any] = {'obs': obs}
    exec(example.group(1), namespace)
    assert isinstance(namespace['action'], int) and env.action_space.contains(namespace['action'])
    env.step(namespace['action'])
