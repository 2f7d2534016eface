"""PPO through its three modes: GAE on a hand-built rollout, the update and its schedules, actions,
and the observation and reward statistics that travel in checkpoints."""
import math

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium import spaces

from tidal.envs import GymEnv
from tidal.envs.env_manager import make_env_manager
from tidal.base.errors import ConfigError
from tidal.base.modes import EnvLayout, Timestep
from tidal.policies.ppo import PPOPolicy
from tidal.worker.checkpoint import load_checkpoint, load_policy_weights, policy_state, save_checkpoint
from tidal.worker.collector import SampleCollector
from tidal.base.nest import concat

GAMMA, LAM = 0.9, 0.8
OPAQUE_COUNTER_ID = 'tidal_test/OpaqueCounter-v0'


def make_ppo(action_space='discrete', action_shape=2, obs_shape=3, enable_field=('learn', 'collect', 'eval'),
             model=(), **sections):
    cfg = PPOPolicy.default_config()
    cfg.model.update(obs_shape=obs_shape, action_shape=action_shape, action_space=action_space,
                     encoder_hidden_sizes=[16, 16], **dict(model))
    cfg.collect.update(discount_factor=GAMMA, gae_lambda=LAM)
    for section, values in sections.items():
        cfg[section].update(values)
    return PPOPolicy(cfg, enable_field=enable_field)


def timestep(next_obs, reward, terminated=None, truncated=None):
    envs = reward.shape[0]
    no = torch.zeros(envs, dtype=torch.bool)
    return Timestep(next_obs=next_obs, reward=reward, terminated=no if terminated is None else terminated,
                    truncated=no if truncated is None else truncated, first=no)


def collect(policy, obs, timesteps):
    """Drive the collect mode over a list of timesteps; returns the train sample and the acted-on obs."""
    mode, rows, acted = policy.collect_mode, [], []
    for step in timesteps:
        output = mode.forward(obs)
        rows.append(mode.process_transition(obs, output, step))
        acted.append(obs)
        obs = step.next_obs  # no env resets a cut episode here: the next obs is arbitrary anyway
    return mode.get_train_sample(concat(rows), EnvLayout(num_envs=obs.shape[0], steps=len(timesteps))), acted


def two_env_rollout(policy):
    """2 envs x 3 steps: env 0 is truncated at step 1, env 1 terminated at step 1."""
    generator = torch.Generator().manual_seed(0)
    obs = torch.randn(2, 3, generator=generator)
    next_obs = [torch.randn(2, 3, generator=generator) for _ in range(3)]
    rewards = torch.tensor([[1.0, -2.0], [0.5, 3.0], [2.0, -1.0]])
    steps = [timestep(next_obs[0], rewards[0]),
             timestep(next_obs[1], rewards[1], terminated=torch.tensor([False, True]),
                      truncated=torch.tensor([True, False])),
             timestep(next_obs[2], rewards[2])]
    sample, acted = collect(policy, obs, steps)
    with torch.no_grad():  # the values GAE starts from are those of the acted-on obs
        assert torch.allclose(sample['value'], policy.model.value(torch.cat(acted)), atol=1e-6)
    return sample, rewards, next_obs


def test_truncated_step_bootstraps_from_final_obs_and_terminated_does_not():
    torch.manual_seed(0)
    policy = make_ppo()
    sample, r, next_obs = two_env_rollout(policy)
    v = sample['value'].reshape(3, 2)
    with torch.no_grad():
        final = policy.model.value(next_obs[1])  # V of each env's obs after step 1 (env 0's final obs)
        last = policy.model.value(next_obs[2])  # V of the obs the collector acts on next
    # env 0: truncated at step 1, so step 1 bootstraps from V(final obs) and carries nothing from step 2
    a0_2 = r[2, 0] + GAMMA * last[0] - v[2, 0]
    a0_1 = r[1, 0] + GAMMA * final[0] - v[1, 0]
    a0_0 = r[0, 0] + GAMMA * v[1, 0] - v[0, 0] + GAMMA * LAM * a0_1
    # env 1: terminated at step 1, so step 1 bootstraps from nothing
    a1_2 = r[2, 1] + GAMMA * last[1] - v[2, 1]
    a1_1 = r[1, 1] - v[1, 1]
    a1_0 = r[0, 1] + GAMMA * v[1, 1] - v[0, 1] + GAMMA * LAM * a1_1
    expected = torch.stack([a0_0, a1_0, a0_1, a1_1, a0_2, a1_2])  # step-major rows
    assert torch.allclose(sample['advantage'], expected, atol=1e-6)
    assert torch.allclose(sample['return'], expected + sample['value'], atol=1e-6)
    assert 'bootstrap_value' not in sample and sample['action'].shape == (6, )


def test_ignore_done_makes_the_terminated_step_bootstrap_too():
    torch.manual_seed(0)
    policy = make_ppo(learn=dict(ignore_done=True))
    sample, r, next_obs = two_env_rollout(policy)
    v = sample['value'].reshape(3, 2)
    with torch.no_grad():
        final = policy.model.value(next_obs[1])
    advantage = sample['advantage'].reshape(3, 2)
    assert torch.allclose(advantage[1, 1], r[1, 1] + GAMMA * final[1] - v[1, 1], atol=1e-6)
    assert torch.allclose(advantage[0, 1], r[0, 1] + GAMMA * v[1, 1] - v[0, 1] + GAMMA * LAM * advantage[1, 1],
                          atol=1e-6)


def random_rollout(policy, envs=4, steps=8, obs_shape=3):
    generator = torch.Generator().manual_seed(1)
    obs = torch.randn(envs, obs_shape, generator=generator)
    timesteps = [timestep(torch.randn(envs, obs_shape, generator=generator), torch.randn(envs, generator=generator),
                          terminated=torch.rand(envs, generator=generator) < 0.2) for _ in range(steps)]
    sample, acted = collect(policy, obs, timesteps)
    sample['env_step'] = 0
    return sample, acted


def test_first_update_on_its_own_rollout_has_ratio_one_and_reports_every_monitor():
    torch.manual_seed(0)
    policy = make_ppo()
    batch, _ = random_rollout(policy)
    info = policy.learn_mode.forward(batch)
    assert set(policy.learn_mode.monitor_vars()) <= set(info)
    for name in ('approx_kl', 'clip_frac', 'explained_variance', 'entropy', 'value_loss', 'policy_loss',
                 'grad_norm', 'total_loss'):
        assert info[name].dim() == 0 and torch.isfinite(info[name]), name
    assert abs(float(info['approx_kl'])) < 1e-6
    assert float(info['clip_frac']) == 0.0
    # the same batch again: the policy has moved, so the ratio is no longer 1
    assert abs(float(policy.learn_mode.forward(batch)['approx_kl'])) > 1e-9


@pytest.mark.parametrize('clip_norm', [1e-12, None])
def test_grad_clip_norm_bounds_the_parameter_change(clip_norm):
    """Adam's first step moves each parameter by lr * g / (|g| + eps): at most lr * clip_norm / eps."""
    torch.manual_seed(0)
    lr = 1e-2
    policy = make_ppo(learn=dict(grad_clip_norm=clip_norm, learning_rate=lr))
    batch, _ = random_rollout(policy)
    before = [p.detach().clone() for p in policy.model.parameters()]
    info = policy.learn_mode.forward(batch)
    change = max(float((p.detach() - b).abs().max()) for p, b in zip(policy.model.parameters(), before))
    if clip_norm is None:
        assert change > 0.5 * lr
    else:
        assert float(info['grad_norm']) > clip_norm  # reported before clipping
        assert change <= lr * clip_norm / 1e-8 * 1.01


@pytest.mark.parametrize('env_step, remaining', [(0, 1.0), (25_000, 0.75), (100_000, 0.0), (150_000, 0.0)])
def test_lr_and_clip_ratio_decay_linearly_with_the_env_step(env_step, remaining):
    torch.manual_seed(0)
    policy = make_ppo(learn=dict(lr_decay=True, clip_decay=True, decay_env_steps=100_000, learning_rate=1e-3,
                                 clip_ratio=0.2))
    batch, _ = random_rollout(policy)
    batch['env_step'] = env_step
    info = policy.learn_mode.forward(batch)
    assert policy._optimizer.param_groups[0]['lr'] == pytest.approx(1e-3 * remaining)
    assert float(info['learning_rate']) == pytest.approx(1e-3 * remaining)
    assert float(info['clip_ratio']) == pytest.approx(0.2 * remaining)


def test_lr_decay_alone_leaves_the_clip_ratio():
    policy = make_ppo(learn=dict(lr_decay=True, decay_env_steps=1000, learning_rate=1e-3, clip_ratio=0.2))
    batch, _ = random_rollout(policy)
    batch['env_step'] = 500
    info = policy.learn_mode.forward(batch)
    assert float(info['clip_ratio']) == pytest.approx(0.2)
    assert policy._optimizer.param_groups[0]['lr'] == pytest.approx(5e-4)


@pytest.mark.parametrize('decay', ['lr_decay', 'clip_decay'])
def test_decay_without_decay_env_steps_is_a_config_error(decay):
    with pytest.raises(ConfigError, match=r'policy\.learn\.decay_env_steps must be set'):
        make_ppo(learn={decay: True})


def test_continuous_collect_learns_from_the_unclipped_sample():
    torch.manual_seed(0)
    policy = make_ppo(action_space='continuous', model=dict(log_std_init=1.0))  # std e: many samples beyond 1
    obs = torch.randn(64, 3)
    output = policy.collect_mode.forward(obs)
    assert output['action'].abs().max() > 1.0  # the env adapter clips it (tests/envs/test_gym_env.py)
    stored = policy.collect_mode.process_transition(obs, output, timestep(obs, torch.zeros(64)))
    sample = policy.collect_mode.get_train_sample(stored, EnvLayout(num_envs=64, steps=1))
    assert torch.equal(sample['action'], output['action'])
    with torch.no_grad():  # the log-probability learned from is that of the sample as drawn
        assert torch.allclose(sample['log_prob'], policy.model.policy(obs).log_prob(output['action']))


def test_continuous_eval_is_the_deterministic_mean():
    torch.manual_seed(0)
    policy = make_ppo(action_space='continuous', model=dict(log_std_init=1.0))
    obs = torch.randn(16, 3) * 100
    first, second = policy.eval_mode.forward(obs)['action'], policy.eval_mode.forward(obs)['action']
    assert torch.equal(first, second)
    with torch.no_grad():
        assert torch.allclose(first, policy.model.policy(obs).mean)


def test_collect_never_picks_a_masked_action():
    torch.manual_seed(0)
    policy = make_ppo(action_shape=4)
    generator = torch.Generator().manual_seed(0)
    observation = torch.randn(2000, 3, generator=generator)
    mask = torch.rand(2000, 4, generator=generator) < 0.5
    mask[torch.arange(2000), torch.randint(4, (2000, ), generator=generator)] = True  # one legal action at least
    output = policy.collect_mode.forward({'observation': observation, 'action_mask': mask})
    action = output['action']
    assert mask[torch.arange(2000), action].all()
    assert len(action.unique()) == 4  # the policy samples: every action occurs where it is legal
    assert torch.equal(output['obs']['action_mask'], mask)
    eval_action = policy.eval_mode.forward({'observation': observation, 'action_mask': mask})['action']
    assert mask[torch.arange(2000), eval_action].all()


def normalized_policy(**kwargs):
    return make_ppo(action_space='continuous', normalize=dict(obs=True), **kwargs)


def shifted_obs(seed, rows=32):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(rows, 3, generator=generator) * torch.tensor([1.0, 5.0, 20.0]) + torch.tensor([3.0, -4.0, 50.0])


def rms(policy):
    return policy._obs_rms.mean.clone(), policy._obs_rms.var.clone(), policy._obs_rms.count.clone()


def test_collect_updates_the_obs_statistics_and_eval_uses_them_frozen():
    torch.manual_seed(0)
    policy = normalized_policy()
    obs = shifted_obs(0)
    policy.collect_mode.forward(obs)
    mean, var, count = rms(policy)
    assert float(count) == pytest.approx(32 + 1e-4)
    assert torch.allclose(mean, obs.double().mean(0), atol=1e-4)
    policy.eval_mode.forward(shifted_obs(1))
    after = rms(policy)
    assert all(torch.equal(x, y) for x, y in zip((mean, var, count), after))
    # the collected obs are stored normalised, so the learn mode sees them as they were at collection
    stored = policy.collect_mode.forward(obs)['obs']
    assert stored.abs().mean() < 2.0 and obs.abs().mean() > 10.0


def test_obs_statistics_survive_a_checkpoint_round_trip(tmp_path):
    torch.manual_seed(0)
    policy = normalized_policy()
    for seed in range(3):
        policy.collect_mode.forward(shifted_obs(seed))
    save_checkpoint(policy.learn_mode.state_dict(), tmp_path / 'ppo.pt')
    state = load_checkpoint(tmp_path / 'ppo.pt')
    torch.manual_seed(1)
    clone = normalized_policy()
    clone.learn_mode.load_state_dict(state)
    assert all(torch.equal(x, y) for x, y in zip(rms(policy), rms(clone)))
    probe = shifted_obs(10)
    assert torch.equal(policy.eval_mode.forward(probe)['action'], clone.eval_mode.forward(probe)['action'])

    # what `tidal eval` does: an eval-only policy and load_weights
    torch.manual_seed(2)
    deployed = normalized_policy(enable_field=('eval', ))
    load_policy_weights(deployed, policy_state({'policy': state}, 'ppo.pt'), 'ppo.pt')
    assert all(torch.equal(x, y) for x, y in zip(rms(policy), rms(deployed)))
    assert torch.equal(policy.eval_mode.forward(probe)['action'], deployed.eval_mode.forward(probe)['action'])

    # the weights without the statistics act differently: the statistics matter for these actions
    torch.manual_seed(3)
    weights_only = normalized_policy(enable_field=('eval', ))
    weights_only.model.load_state_dict(state['model'])
    assert not torch.equal(policy.eval_mode.forward(probe)['action'], weights_only.eval_mode.forward(probe)['action'])


def test_reward_scaling_state_travels_in_the_learn_and_collect_state_dicts(tmp_path):
    torch.manual_seed(0)

    def scaled(policy, reward):
        obs = torch.zeros(2, 3)
        output = policy.collect_mode.forward(obs)
        return policy.collect_mode.process_transition(obs, output, timestep(obs, reward))['reward']

    policy = make_ppo(normalize=dict(reward=True))
    for reward in ([1.0, 4.0], [2.0, -3.0], [0.5, 8.0]):
        scaled(policy, torch.tensor(reward))
    save_checkpoint({'learn': policy.learn_mode.state_dict(), 'collect': policy.collect_mode.state_dict()},
                    tmp_path / 'policy.pt')
    state = load_checkpoint(tmp_path / 'policy.pt')
    assert set(state['collect']) == {'returns'}  # each env's running return: acting state
    assert 'reward_rms' in state['learn']  # the statistics: learned state
    clone, fresh = make_ppo(normalize=dict(reward=True)), make_ppo(normalize=dict(reward=True))
    clone.learn_mode.load_state_dict(state['learn'])
    clone.collect_mode.load_state_dict(state['collect'])
    reward = torch.tensor([1.5, -2.0])
    expected = scaled(policy, reward)
    assert torch.equal(scaled(clone, reward), expected)
    assert not torch.allclose(scaled(fresh, reward), expected)
    assert make_ppo().collect_mode.state_dict() == {}


class OpaqueCounter(gymnasium.Env):
    """Rewards 1, 2, 3, ... and holds state that is not plain data: a resumed run restarts its episodes."""

    observation_space = spaces.Box(0.0, 100.0, (1, ), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self):
        self.engine, self.count = object(), 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.count = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.count += 1
        return np.full(1, self.count, np.float32), float(self.count), False, False, {}


gymnasium.register(OPAQUE_COUNTER_ID, entry_point=OpaqueCounter, max_episode_steps=5)


def test_reward_statistics_survive_a_resume_whose_envs_restart_their_episodes():
    def collector():
        policy = make_ppo(obs_shape=1, normalize=dict(reward=True))
        env = GymEnv({'env_id': OPAQUE_COUNTER_ID})
        return policy, SampleCollector(make_env_manager(env.make, 'base', 2, OPAQUE_COUNTER_ID, 'collector'),
                                       policy.collect_mode, policy.device)

    policy, before = collector()
    before.reset(seed=0)
    before.collect(12)
    state, learn_state = before.state_dict(), policy.learn_mode.state_dict()
    before.env.close()
    saved = policy._reward_scaler.return_rms.state_dict()
    assert float(saved['count']) == pytest.approx(12 + 1e-4)

    resumed_policy, after = collector()
    resumed_policy.learn_mode.load_state_dict(learn_state)  # as Run._restore does
    assert after.load_state_dict(state, fallback_seed=1)  # the envs restart: the reason is returned
    after.env.close()
    restored = resumed_policy._reward_scaler.return_rms.state_dict()
    assert all(torch.equal(restored[key], saved[key]) for key in ('mean', 'var', 'count'))


def test_sampling_eval_draws_from_the_hand_built_distribution():
    """Constant logits log(0.7, 0.3), and a Gaussian of mean (1, -2) and std 0.5, whatever the obs."""
    discrete = make_ppo(action_shape=2, eval=dict(deterministic=False))
    continuous = make_ppo(action_space='continuous', model=dict(log_std_init=math.log(0.5)),
                          eval=dict(deterministic=False))
    with torch.no_grad():
        discrete.model.policy_head.logits.weight.zero_()
        discrete.model.policy_head.logits.bias.copy_(torch.tensor([0.7, 0.3]).log())
        continuous.model.policy_head.mu.weight.zero_()
        continuous.model.policy_head.mu.bias.copy_(torch.tensor([1.0, -2.0]))
    obs = torch.randn(4000, 3)
    discrete.eval_mode.seed(0)
    action = discrete.eval_mode.forward(obs)['action']
    assert action.float().mean().item() == pytest.approx(0.3, abs=0.03)  # the greedy action is always 0
    continuous.eval_mode.seed(0)
    action = continuous.eval_mode.forward(obs)['action']
    assert torch.allclose(action.mean(dim=0), torch.tensor([1.0, -2.0]), atol=0.05)
    assert torch.allclose(action.std(dim=0), torch.tensor([0.5, 0.5]), atol=0.05)
