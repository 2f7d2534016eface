"""muzero_repr: a MuZero model's latent as the observation of PPO or SAC.

The policy held under the config, the options refused, where gradients reach the encoder, what is
stored (raw observations, env rewards) in the 'repr' feed's model replay, the model's own update schedule,
state dicts, and short runs.
"""
import ast
import copy
import inspect
import json
import os
import signal
import subprocess
import sys

import pytest
import torch
from easydict import EasyDict

import tidal.policies.muzero_repr as muzero_repr
from tidal.config import comments_for, compile_config
from tidal.config.declared import class_rules
from tidal.base.defaults import FreeDict, class_defaults
from tidal.entry.pipelines import check_entry_point, resume, run_feed, train
from tidal.worker.feeds.replay import ReplayFeed
from tidal.worker.feeds.repr import ReprFeed
from tidal.worker.feeds.rollout import RolloutFeed
from tidal.worker.learner import Learner
from tidal.entry.run import RunInterrupted
from tidal.base.errors import ConfigError, TidalError
from tidal.models.muzero import MuZeroLossError, MuZeroModel, MuZeroTargets
from tidal.base.modes import EnvLayout, Timestep
from tidal.policies.discrete_sac import DiscreteSACPolicy
from tidal.policies.muzero_repr import RL_TYPES, MuZeroReprPolicy, wrapped_policy_class
from tidal.registry import POLICY_REGISTRY, policy_class
from tidal.worker.checkpoint import load_checkpoint
from tidal.worker.prioritized_trajectory_buffer import PrioritizedTrajectoryBuffer
from tidal.rl_utils import gather_action
from tidal.base.nest import concat, tree_leaves, tree_map

ENVS, STEPS, OBS, ACTIONS, LATENT = 2, 6, 4, 3, 8


def deep_update(tree, values):
    for key, value in values.items():
        if isinstance(value, dict):
            deep_update(tree[key], value)
        else:
            tree[key] = value


def make_policy(rl_type='ppo', enable_field=('learn', 'collect', 'eval'), action_shape=ACTIONS, **overrides):
    cls = policy_class('muzero_repr', {'rl_type': rl_type})
    cfg = cls.default_config({'rl_type': rl_type})
    cfg.rl_type = rl_type
    cfg.model.update(obs_shape=OBS, action_shape=action_shape)
    if rl_type == 'ppo':
        cfg.model.update(action_space='discrete', encoder_hidden_sizes=[16])
    else:
        cfg.model.update(actor_hidden_sizes=[16], critic_hidden_sizes=[16])
    cfg.repr.model.update(latent_size=LATENT, hidden_sizes=[16], value_support_size=3, reward_support_size=3)
    cfg.repr.update(num_unroll_steps=2, td_steps=3)
    cfg.repr.training.update(mini_batch_size=4, mini_batch_length=2, initial_collect_steps=0, interval=1000)
    deep_update(cfg, overrides)
    return cls(cfg, enable_field=enable_field)


def timesteps(obs_size=OBS, seed=0, truncate_at=None):
    """STEPS batched timesteps of ENVS envs with random observations and rewards; env 0 is truncated at
    step `truncate_at` and env 1 terminated at step 3."""
    generator = torch.Generator().manual_seed(seed)
    steps = []
    for step in range(STEPS):
        terminated = torch.tensor([False, step == 3])
        truncated = torch.tensor([step == truncate_at, False])
        steps.append(Timestep(next_obs=torch.randn(ENVS, obs_size, generator=generator),
                              reward=torch.randn(ENVS, generator=generator), terminated=terminated,
                              truncated=truncated, first=torch.zeros(ENVS, dtype=torch.bool)))
    return steps


def collect(policy, obs=None, steps=None, random=False):
    """Drive the collect mode over `steps`; returns (train sample, transition columns, acted-on obs)."""
    mode = policy.collect_mode
    obs = torch.randn(ENVS, OBS, generator=torch.Generator().manual_seed(1)) if obs is None else obs
    rows, acted = [], []
    for step in steps or timesteps():
        output = mode.random_action(obs) if random else mode.forward(obs)
        rows.append(mode.process_transition(obs, output, step))
        acted.append(obs)
        obs = step.next_obs
    columns = concat([dict(row) for row in rows])
    sample = mode.get_train_sample(concat(rows), EnvLayout(num_envs=ENVS, steps=len(rows)))
    return sample, columns, acted


class StubCollector:
    """What the feeds ask of a collector: `collect` collects with the helper above (ENVS envs, STEPS steps)."""

    num_envs = ENVS

    def __init__(self, policy):
        self.policy, self.env_step = policy, 0

    def collect(self, n_sample, random=False):
        self.env_step += ENVS * STEPS
        return collect(self.policy, random=random)[0]


def make_feed(policy):
    """The 'repr' feed of `policy` (its model replay and schedule), around the held policy's own feed."""
    return ReprFeed(EasyDict(policy=policy.cfg, seed=0), policy.views(), StubCollector(policy),
                    Learner(policy.learn_mode))


def collect_into(feed, policy, **kwargs):
    """`collect`, its raw steps then taken into the feed's model replay (as after a collection of the feed)."""
    result = collect(policy, **kwargs)
    feed.store()
    return result


def encoder_params(policy):
    return [p.detach().clone() for p in policy.model['repr'].representation.parameters()]


def changed(before, policy):
    return any(not torch.equal(a, b) for a, b in zip(before, encoder_params(policy)))


def sac_batch(size=8, seed=0, continuous=False):
    generator = torch.Generator().manual_seed(seed)
    action = (torch.rand(size, 1, generator=generator) * 2 - 1 if continuous
              else torch.randint(ACTIONS, (size,), generator=generator))
    return {'obs': torch.randn(size, OBS, generator=generator), 'next_obs': torch.randn(size, OBS, generator=generator),
            'action': action, 'reward': torch.randn(size, generator=generator),
            'terminated': torch.zeros(size, dtype=torch.bool), 'truncated': torch.zeros(size, dtype=torch.bool)}


# ----- the policy held under the config ----------------------------------------------------------
def test_rl_type_picks_the_held_policys_defaults_rules_and_feed():
    cases = {'ppo': ('rollout', 'clip_ratio', None, 'serial_pipeline_onpolicy'),
             'discrete_sac': ('replay', 'learning_rate_q', 'discrete', 'serial_pipeline')}
    for rl_type, (pipeline, learn_key, action_space, entry_point) in cases.items():
        main = {'env': {'env_id': 'CartPole-v1'}, 'policy': {'rl_type': rl_type}}
        create = {'env': {'type': 'gym'}, 'policy': {'type': 'muzero_repr'}}
        cfg = compile_config(main, create, infer_shapes=False)
        assert cfg.policy.type == 'muzero_repr' and learn_key in cfg.policy.learn
        assert cfg.policy.repr.training.interval == 1 and cfg.policy.repr.train_policy is False
        # the 'repr' feed decorates the held policy's feed, whose spec (entry point) it gives
        assert run_feed(cfg) is ReprFeed and ReprFeed.inner_class(cfg).name == pipeline
        assert ReprFeed.spec(cfg) == ReprFeed.inner_class(cfg).spec(cfg)
        assert ReprFeed.spec(cfg).entry_point == entry_point
        check_entry_point(cfg, entry_point)
        assert policy_class('muzero_repr', cfg.policy) is MuZeroReprPolicy  # one class, whatever it holds
        inner = wrapped_policy_class(cfg.policy)
        assert inner is POLICY_REGISTRY.get(rl_type) and inner.action_space == action_space
        owners = MuZeroReprPolicy.config_owners(cfg.policy)  # the held policy's keys first, then its own
        assert owners[-1] is MuZeroReprPolicy and owners[:len(inner.config_owners(cfg.policy))] == \
            inner.config_owners(cfg.policy)
        comments = comments_for(cfg)  # tidal config show documents the keys of both
        assert comments[f'policy.learn.{learn_key}']
        assert comments['policy.repr.training.interval'].startswith('(int > 0)')
    with pytest.raises(ConfigError, match="unknown config key 'policy.learn.clip_ratio'"):
        compile_config({'env': {'env_id': 'CartPole-v1'}, 'policy': {'rl_type': 'discrete_sac',
                                                                     'learn': {'clip_ratio': 0.1}}},
                       {'env': {'type': 'gym'}, 'policy': {'type': 'muzero_repr'}}, infer_shapes=False)


def test_defaults_are_alfs_encoder_grad_and_ten_model_updates_after_every_training_iteration():
    main = {'env': {'env_id': 'CartPole-v1'}, 'policy': {}}
    create = {'env': {'type': 'gym'}, 'policy': {'type': 'muzero_repr'}}
    cfg = compile_config(main, create, infer_shapes=False)
    assert cfg.policy.repr.encoder_grad is True  # the held policy's losses train h, as in ALF
    # ALF's MuzeroRepresentationTrainingOptions, the interval counted in training iterations
    assert dict(cfg.policy.repr.training) == {
        'interval': 1, 'interval_unit': 'train_iter', 'mini_batch_size': 256, 'mini_batch_length': 1,
        'num_updates_per_train_iter': 10, 'replay_buffer_length': 100_000, 'initial_collect_steps': 2000,
        'priority': True, 'priority_alpha': 1.2, 'priority_beta': 0.0}
    comment = comments_for(cfg)['policy.repr.training.interval_unit']
    assert comment.startswith("(str in {'train_iter', 'learn_update'}) What interval counts")
    main['policy'] = {'repr': {'training': {'interval_unit': 'epoch'}}}
    with pytest.raises(ConfigError, match='policy.repr.training.interval_unit'):
        compile_config(main, create, infer_shapes=False)


def leaf_paths(tree, prefix=''):
    for key, value in tree.items():
        path = f'{prefix}.{key}' if prefix else key
        if isinstance(value, dict) and not isinstance(value, FreeDict):
            yield from leaf_paths(value, path)
        elif isinstance(value, FreeDict):
            yield from (f'{path}.{name}' for name in value)  # its declared keys only
        else:
            yield path


@pytest.mark.parametrize('rl_type', RL_TYPES)
def test_every_default_of_the_config_owners_declares_a_rule(rl_type):
    section = {'rl_type': rl_type}
    rules = class_rules(MuZeroReprPolicy, section)
    defaults = class_defaults(MuZeroReprPolicy, section)
    assert [path for path in leaf_paths(defaults) if path not in rules] == []
    assert defaults['type'] == 'muzero_repr' and defaults['rl_type'] == 'ppo'  # its own keys win
    assert set(leaf_paths(class_defaults(POLICY_REGISTRY.get(rl_type)))) <= set(leaf_paths(defaults))
    assert str(rules['rl_type'].text) == "str in {'ppo', 'discrete_sac', 'sac'}"


def test_unknown_rl_type_names_the_allowed_ones():
    main = {'env': {'env_id': 'CartPole-v1'}, 'policy': {'rl_type': 'dqn'}}
    with pytest.raises(ConfigError) as err:
        compile_config(main, {'env': {'type': 'gym'}, 'policy': {'type': 'muzero_repr'}}, infer_shapes=False)
    assert str(err.value) == ("config key 'policy.rl_type' must be one of 'ppo', 'discrete_sac', 'sac' (the policy "
                              "that learns on the latent), got 'dqn'")


def test_registry_build_holds_the_rl_type_policy():
    cfg = make_policy('discrete_sac').cfg
    policy = POLICY_REGISTRY.build('muzero_repr', cfg)
    assert type(policy) is MuZeroReprPolicy and type(policy.inner) is DiscreteSACPolicy
    assert policy.model['rl'] is policy.inner.model  # both networks, the held one acting on the latent
    assert policy.inner.cfg.model.obs_shape == LATENT and policy.cfg.model.obs_shape == OBS


@pytest.mark.parametrize('rl_type', RL_TYPES)
def test_no_class_is_made_at_run_time(rl_type):
    policy = make_policy(rl_type, action_shape=1 if rl_type == 'sac' else ACTIONS)
    assert type(policy) is MuZeroReprPolicy and type(policy.inner) is POLICY_REGISTRY.get(rl_type)
    assert not hasattr(MuZeroReprPolicy, 'specialize') and '__new__' not in vars(MuZeroReprPolicy)
    assert MuZeroReprPolicy.__subclasses__() == []


def test_the_policy_module_imports_nothing_from_the_worker_layer():
    tree = ast.parse(inspect.getsource(muzero_repr))
    imported = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    imported += [node.module or '' for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert imported and not [name for name in imported if name.startswith('tidal.worker')]


@pytest.mark.parametrize('overrides, message', [
    ({'repr': {'train_policy': True}}, 'policy.repr.train_policy=True needs policy.repr.reanalyze_ratio=1'),
    ({'repr': {'reanalyze_ratio': 0.5}}, 'policy.repr.reanalyze_ratio must be 0 or 1 under muzero_repr'),
    ({'normalize': {'obs': True}}, 'policy.normalize.obs=True cannot work under muzero_repr'),
    ({'learn': {'value_target': 'vtrace'}}, "policy.learn.value_target='vtrace' cannot work under muzero_repr"),
])
def test_options_that_cannot_work_are_refused_naming_the_key(overrides, message):
    with pytest.raises(ConfigError, match=message.replace('.', r'\.')):
        make_policy('ppo', **overrides)


def test_train_policy_with_full_reanalyze_is_accepted():
    policy = make_policy('ppo', repr={'train_policy': True, 'reanalyze_ratio': 1.0})
    assert 'repr_policy_loss' in policy.learn_mode.monitor_vars()


# ----- gradients into the encoder ----------------------------------------------------------------
def test_ppo_update_reaches_the_encoder_only_with_encoder_grad():
    for encoder_grad in (False, True):
        torch.manual_seed(0)
        policy = make_policy('ppo', repr={'encoder_grad': encoder_grad})
        sample, _, _ = collect(policy)
        before, inner_before = encoder_params(policy), [p.clone() for p in policy.model['rl'].parameters()]
        info = policy.learn_mode.forward(sample)
        assert changed(before, policy) is encoder_grad
        assert any(not torch.equal(a, b) for a, b in zip(inner_before, policy.model['rl'].parameters()))
        assert torch.isfinite(info['total_loss'])


def test_held_policys_loss_reaches_h_by_default():
    torch.manual_seed(0)
    policy = make_policy('ppo')  # repr.encoder_grad as its default; no model update is due
    sample, _, _ = collect(policy)
    before = encoder_params(policy)
    policy.learn_mode.forward(sample)
    assert policy._training.learner.updates == 0  # so only PPO's loss reached h
    grads = [p.grad for p in policy.model['repr'].representation.parameters()]
    assert all(grad is not None for grad in grads) and any(grad.abs().sum() > 0 for grad in grads)
    assert changed(before, policy)


def test_discrete_sac_two_backward_passes_train_the_encoder_with_encoder_grad():
    for encoder_grad in (False, True):
        torch.manual_seed(0)
        policy = make_policy('discrete_sac', repr={'encoder_grad': encoder_grad})
        before = encoder_params(policy)
        for seed in range(2):
            info = policy.learn_mode.forward(sac_batch(seed=seed))
        assert changed(before, policy) is encoder_grad
        assert torch.isfinite(info['critic_loss']) and torch.isfinite(info['policy_loss'])


def test_encoder_step_follows_the_gradient_summed_over_the_wrapped_losses():
    """With SGD in place of Adam, h's step is -lr times the gradient of (critic + policy loss) through s."""
    torch.manual_seed(0)
    policy = make_policy('discrete_sac', repr={'encoder_grad': True}, learn={'auto_alpha': False})
    batch = sac_batch()
    reference = make_policy('discrete_sac', repr={'encoder_grad': True}, learn={'auto_alpha': False})
    reference.learn_mode.load_state_dict(policy.learn_mode.state_dict())
    policy._training.encoder_optimizer = torch.optim.SGD(policy.model['repr'].representation.parameters(), lr=1.0)
    sac = reference.inner  # the held discrete SAC, on the latent
    # the losses of the update, both measured before it, differentiated through h
    latent = reference.model['repr'].represent(batch['obs'])
    with torch.no_grad():
        next_obs = reference.model['repr'].represent(batch['next_obs'])
        _, next_prob, next_log_prob = sac._policy(next_obs)
        next_q = sac._target_critic(next_obs).min(dim=0).values
        alpha = sac._temperature.value
        next_value = (next_prob * (next_q - alpha * next_log_prob)).sum(dim=-1)
        target = batch['reward'] + sac._gamma * next_value
    q = gather_action(sac.model.critic(latent), batch['action'])
    critic_loss = (q - target).pow(2).mean(dim=1).sum()
    encoder = list(reference.model['repr'].representation.parameters())
    critic_grads = torch.autograd.grad(critic_loss, encoder, retain_graph=True)
    before = encoder_params(policy)
    policy.learn_mode.forward(batch)
    # the policy loss sees the critics after their step: take them from the updated policy
    sac.model.critic.load_state_dict(policy.inner.model.critic.state_dict())
    _, prob, log_prob = sac._policy(latent)
    with torch.no_grad():
        min_q = sac.model.critic(latent).min(dim=0).values
    policy_grads = torch.autograd.grad((prob * (alpha * log_prob - min_q)).sum(dim=-1).mean(), encoder)
    for old, new, critic_grad, policy_grad in zip(before, encoder_params(policy), critic_grads, policy_grads):
        assert critic_grad.abs().sum() > 0 and policy_grad.abs().sum() > 0
        torch.testing.assert_close(new, old - (critic_grad + policy_grad), rtol=1e-4, atol=1e-6)


# ----- what is stored --------------------------------------------------------------------------
def test_raw_observations_and_env_rewards_are_stored():
    torch.manual_seed(0)
    policy = make_policy('ppo', normalize={'reward': True})
    feed = make_feed(policy)
    steps = timesteps(truncate_at=2)
    sample, columns, acted = collect_into(feed, policy, steps=steps)
    raw = torch.cat(acted)
    assert sample['obs'].shape == (ENVS * STEPS, OBS) and torch.equal(sample['obs'], raw)
    assert 'repr_reward' not in sample and 'repr_bootstrap_value' not in sample
    assert policy.views().extra['repr'].collected() == []  # the feed took them
    buffer = feed.buffer
    assert isinstance(buffer, PrioritizedTrajectoryBuffer) and buffer.current_position().tolist() == [STEPS] * ENVS
    env_ids = torch.arange(ENVS).repeat(STEPS)
    positions = torch.arange(STEPS).repeat_interleave(ENVS)
    stored = buffer.get(env_ids, positions)
    assert torch.equal(stored['obs'], raw)
    assert torch.equal(stored['reward'], torch.stack([step.reward for step in steps]).reshape(-1))  # not scaled
    assert torch.equal(stored['action'], columns['action'])
    # V(final obs) of the model where env 0 was truncated (step 2), 0 elsewhere
    final = steps[2].next_obs[:1]
    expected = policy.model['repr'].value(policy.model['repr'].initial_inference(final))
    bootstrap = stored['bootstrap_value'].reshape(STEPS, ENVS)
    torch.testing.assert_close(bootstrap[2, :1], expected)
    assert bootstrap.count_nonzero() <= 1


def test_off_policy_transitions_keep_raw_obs_and_next_obs():
    torch.manual_seed(0)
    policy = make_policy('discrete_sac')
    steps = timesteps()
    sample, _, acted = collect(policy, steps=steps, random=True)
    assert torch.equal(sample['obs'], torch.cat(acted))
    assert torch.equal(sample['next_obs'], torch.cat([step.next_obs for step in steps]))


def test_dict_observations_encode_only_the_observation_and_keep_the_mask():
    torch.manual_seed(0)
    policy = make_policy('discrete_sac', repr={'training': {'interval': 1, 'interval_unit': 'learn_update',
                                                            'num_updates_per_train_iter': 1}})
    feed = make_feed(policy)
    mask = torch.tensor([[True, False, True], [False, True, False]])
    obs = {'observation': torch.randn(ENVS, OBS), 'action_mask': mask}
    assert mask.gather(1, policy.eval_mode.forward(obs)['action'][:, None]).all()
    steps = [Timestep(next_obs={'observation': step.next_obs, 'action_mask': mask}, reward=step.reward,
                      terminated=step.terminated, truncated=step.truncated, first=step.first) for step in timesteps()]
    sample, _, _ = collect_into(feed, policy, obs=obs, steps=steps)
    assert sample['obs']['observation'].shape == (ENVS * STEPS, OBS)
    assert torch.equal(sample['obs']['action_mask'][:2], mask)
    assert torch.equal(feed.buffer.get(torch.tensor([1]), torch.tensor([0]))['obs']['action_mask'], mask[1:])
    info = policy.learn_mode.forward(tree_map(lambda column: column[:8], sample))  # and one model update
    assert policy._training.learner.updates == 1 and float(info['repr_total_loss']) > 0


# ----- the model's own schedule ----------------------------------------------------------------
def test_learn_update_unit_updates_the_model_every_interval_learn_calls_once_enough_steps_are_collected():
    torch.manual_seed(0)
    policy = make_policy('ppo', repr={'training': {'interval': 3, 'interval_unit': 'learn_update',
                                                   'num_updates_per_train_iter': 2,
                                                   'initial_collect_steps': 2 * ENVS * STEPS}})
    feed = make_feed(policy)  # keeps the model's replay and schedules its updates inside the learn updates
    sample, _, _ = collect_into(feed, policy)  # half of initial_collect_steps
    learner = policy._training.learner
    updates = []
    for _ in range(4):
        info = policy.learn_mode.forward(sample)
        updates.append(learner.updates)
        assert float(info['repr_total_loss']) == 0.0  # reported (for the finite guard) before the first update
    assert updates == [0, 0, 0, 0]
    collect_into(feed, policy)  # now initial_collect_steps are in the model's replay
    for _ in range(5):  # learn calls 5..9: the interval comes round at 6 and 9
        info = policy.learn_mode.forward(sample)
        updates.append(learner.updates)
    assert updates[4:] == [0, 2, 2, 2, 4]
    assert set(policy.learn_mode.monitor_vars()) >= {'repr_total_loss', 'repr_value_loss', 'repr_reward_loss'}
    assert float(info['repr_total_loss']) > 0 and torch.isfinite(info['repr_grad_norm'])


def rollout_feed_run(policy, feed_steps):
    """`feed_steps` steps of the 'repr' feed around PPO's rollout feed; per step, the model's update count
    and repr_total_loss that each learn update of the step reported, and the model's update count after it."""
    feed = make_feed(policy)
    seen = []
    feed.inner.learner.register_hook(
        lambda learner, info: seen[-1].append((policy._training.learner.updates, float(info['repr_total_loss']))), 1)
    after = []
    for _ in range(feed_steps):
        seen.append([])
        feed.step(None)
        after.append(policy._training.learner.updates)
    return seen, after


def test_model_updates_per_rollout_feed_step_count_training_iterations_or_learn_updates():
    # 4 learn updates per step (2 epochs of 2 minibatches of the 12 rows), model warm after the 2nd step
    learn = {'epoch_per_collect': 2, 'batch_size': ENVS * STEPS // 2}
    training = {'interval': 2, 'initial_collect_steps': 2 * ENVS * STEPS}  # num_updates_per_train_iter: 10
    torch.manual_seed(0)
    policy = make_policy('ppo', learn=learn, repr={'training': training})
    seen, after = rollout_feed_run(policy, 5)
    # train iterations (the default): 10 updates after every 2nd step, none inside a learn update
    assert after == [0, 10, 10, 20, 20]
    assert [[count for count, _ in step] for step in seen] == [[0] * 4, [0] * 4, [10] * 4, [10] * 4, [20] * 4]
    # their losses are reported from the next learn update on (0 before the model's first update)
    assert [loss > 0 for _, loss in seen[1] + seen[2]] == [False] * 4 + [True] * 4
    # learn updates (the old unit): 10 updates inside every 2nd learn update, from the step that warmed it
    torch.manual_seed(0)
    policy = make_policy('ppo', learn=learn, repr={'training': {**training, 'interval_unit': 'learn_update'}})
    seen, after = rollout_feed_run(policy, 5)
    assert after == [0, 20, 40, 60, 80]
    assert [count for count, _ in seen[1]] == [0, 10, 10, 20]
    assert [loss > 0 for _, loss in seen[1]] == [False, True, True, True]


def test_feed_and_learn_state_carry_the_training_iterations_and_unreported_model_losses():
    """Resumed after the 2nd step (the model's losses of its updates not reported yet) or after the 3rd (its
    interval half way), the run goes on as it would have."""
    learn = {'epoch_per_collect': 2, 'batch_size': ENVS * STEPS // 2}
    training = {'interval': 2, 'num_updates_per_train_iter': 2}

    def build(seed):
        torch.manual_seed(seed)
        policy = make_policy('ppo', learn=learn, repr={'training': training})
        feed = make_feed(policy)
        losses = []  # repr_total_loss of every learn update
        feed.inner.learner.register_hook(lambda learner, info: losses.append(info['repr_total_loss']), 1)
        return policy, feed, losses

    def run(feed, steps):
        for step in steps:
            torch.manual_seed(step)  # PPO's action sampling, the same in every run
            feed.step(None)

    policy, feed, losses = build(0)
    states = {}
    for step in (1, 2, 3):
        run(feed, [step])
        # copies, as a checkpoint holds them
        states[step] = copy.deepcopy((policy.learn_mode.state_dict(), policy.collect_mode.state_dict(),
                                      feed.state_dict()))
    run(feed, [4])
    assert policy._training.learner.updates == 4 and float(losses[8]) > 0  # after steps 2 and 4, reported from step 3
    assert len(states[2][0]['repr_unreported']) == 2 and states[3][2]['train_iters'] == 3
    for resumed_at in (2, 3):
        restored, restored_feed, restored_losses = build(1)
        learn_state, collect_state, feed_state = states[resumed_at]
        restored.learn_mode.load_state_dict(learn_state)
        restored.collect_mode.load_state_dict(collect_state)
        restored_feed.load_state_dict(feed_state)
        run(restored_feed, range(resumed_at + 1, 5))
        assert restored._training.learner.updates == 4
        assert torch.equal(torch.stack(restored_losses), torch.stack(losses[4 * resumed_at:]))
        for a, b in zip(policy.model.parameters(), restored.model.parameters()):
            assert torch.equal(a, b)


def test_sequences_of_starts_are_capped_at_each_envs_newest_step():
    torch.manual_seed(0)
    policy = make_policy('ppo', repr={'training': {'mini_batch_size': 64, 'mini_batch_length': 4,
                                                   'priority': False}})
    feed = make_feed(policy)
    collect_into(feed, policy)
    env_ids, positions, weight = feed.sample_starts()
    assert weight is None and env_ids.shape == positions.shape == (256,)
    starts = positions.reshape(64, 4)
    assert (starts.diff(dim=1) >= 0).all() and (starts.diff(dim=1) <= 1).all()
    assert int(positions.max()) == STEPS - 1 and (env_ids.reshape(64, 4) == env_ids.reshape(64, 4)[:, :1]).all()


def test_continuous_actions_train_the_model_with_sac():
    torch.manual_seed(0)
    policy = make_policy('sac', action_shape=1, repr={'training': {'interval': 1, 'interval_unit': 'learn_update',
                                                                   'num_updates_per_train_iter': 1}})
    assert policy.model['repr'].continuous_actions
    feed = make_feed(policy)
    collect_into(feed, policy, random=True)
    info = policy.learn_mode.forward(sac_batch(continuous=True))
    assert policy._training.learner.updates == 1 and torch.isfinite(info['repr_total_loss'])
    with pytest.raises(ConfigError, match='policy.repr.train_policy needs discrete actions'):
        make_policy('sac', action_shape=1, repr={'train_policy': True, 'reanalyze_ratio': 1.0})


def test_continuous_action_model_feeds_the_action_vector_to_g_and_has_no_search_or_policy_target():
    torch.manual_seed(0)
    model = MuZeroModel(3, 2, latent_size=4, hidden_sizes=[8], value_support_size=2, reward_support_size=2,
                        continuous_actions=True)
    latent = model.represent(torch.randn(5, 3))
    left = model.recurrent_inference(latent, torch.full((5, 2), -1.0))
    right = model.recurrent_inference(latent, torch.full((5, 2), 1.0))
    assert left.latent.shape == (5, 4) and not torch.equal(left.latent, right.latent)
    with pytest.raises(TidalError, match='tree search expands one child per discrete action'):
        model.recurrent_fn(latent, torch.zeros(5, dtype=torch.long))
    no = torch.zeros(5, 1, dtype=torch.bool)
    targets = MuZeroTargets(value=torch.zeros(5, 1), reward=torch.zeros(5, 1), policy=torch.zeros(5, 1, 2),
                            game_over=no, beyond_episode_end=no)
    with pytest.raises(MuZeroLossError, match='train_policy needs discrete actions'):
        model.calc_loss([model.initial_inference(torch.randn(5, 3))], targets)


def test_continuous_unrolls_repeat_the_last_action_past_the_episode_end():
    policy = make_policy('sac', action_shape=2)
    action = torch.tensor([[[0.1, 0.2], [0.3, 0.4], [9.0, 9.0]]])
    has_row = torch.tensor([[True, True, False]])
    expected = torch.tensor([[[0.1, 0.2], [0.3, 0.4], [0.3, 0.4]]])
    assert torch.equal(policy._training.learner._unroll_actions(action, has_row), expected)


# ----- state dicts -----------------------------------------------------------------------------
def test_learn_and_collect_state_round_trip():
    training = {'interval': 2, 'interval_unit': 'learn_update', 'num_updates_per_train_iter': 1}
    torch.manual_seed(0)
    policy = make_policy('ppo', repr={'training': training})
    feed = make_feed(policy)
    sample, _, _ = collect_into(feed, policy)
    for _ in range(3):
        policy.learn_mode.forward(sample)
    # copies, as a checkpoint holds them: a state dict shares its tensors with the live optimizers
    learn_state, collect_state, feed_state = copy.deepcopy(
        (policy.learn_mode.state_dict(), policy.collect_mode.state_dict(), feed.state_dict()))
    assert {'repr', 'repr_learn_calls', 'encoder_optimizer'} <= set(learn_state) and 'repr_buffer' in feed_state
    assert 'repr_buffer' not in learn_state and 'repr_buffer' not in collect_state
    torch.manual_seed(1)
    restored = make_policy('ppo', repr={'training': training})
    restored_feed = make_feed(restored)
    restored.learn_mode.load_state_dict(learn_state)
    restored.collect_mode.load_state_dict(collect_state)
    restored_feed.load_state_dict(feed_state)
    obs = torch.randn(5, OBS)
    assert torch.equal(policy.eval_mode.forward(obs)['action'], restored.eval_mode.forward(obs)['action'])
    # the next update (a model update too: call 4) is the same: optimizers, counters, replay and its sampling
    infos = []
    for each in (policy, restored):
        torch.manual_seed(2)
        infos.append(each.learn_mode.forward(sample))
    assert policy._training.learner.updates == restored._training.learner.updates == 2
    for key in ('total_loss', 'repr_total_loss', 'repr_value_loss'):
        assert torch.equal(infos[0][key], infos[1][key]), key
    for a, b in zip(policy.model.parameters(), restored.model.parameters()):
        assert torch.equal(a, b)


def test_eval_only_policy_loads_both_networks_from_a_learn_state():
    torch.manual_seed(0)
    policy = make_policy('discrete_sac')
    torch.manual_seed(1)
    evaluator = make_policy('discrete_sac', enable_field=('eval',))
    evaluator.load_weights(policy.learn_mode.state_dict())
    for a, b in zip(policy.model.parameters(), evaluator.model.parameters()):
        assert torch.equal(a, b)


# ----- end to end ------------------------------------------------------------------------------
def test_cli_trains_the_ppo_zoo_config(tmp_path):
    sets = ['env.collector_env_num=2', 'policy.collect.n_sample=64', 'policy.learn.batch_size=32',
            'policy.learn.epoch_per_collect=2', 'policy.eval.evaluator.eval_freq=8', 'env.n_evaluator_episode=1',
            'env.evaluator_env_num=1', 'env.stop_value=null', 'policy.model.encoder_hidden_sizes=[16]',
            'policy.repr.model.latent_size=16', 'policy.repr.model.hidden_sizes=[32]',
            'policy.repr.training.initial_collect_steps=64',
            'policy.repr.training.mini_batch_size=32', 'policy.learn.learner.log_freq=4']
    result = subprocess.run([sys.executable, '-m', 'tidal', 'train', 'cartpole_muzero_repr_ppo', '--max-env-step',
                             '256', '--exp-name', 'run', '--no-progress', *[a for s in sets for a in ('--set', s)]],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / 'run' / 'summary.json').read_text())
    assert summary['env_step'] == 256 and summary['train_iter'] == 4 * 4  # 4 rollouts of 2 epochs x 2 minibatches
    latest = load_checkpoint(tmp_path / 'run' / 'ckpt' / 'latest.pt')
    # 4 model updates (the zoo's) after each of the 4 rollouts: the first one filled initial_collect_steps
    assert latest['policy']['repr']['updates'] == 4 * 4
    assert latest['feed']['repr_buffer']['current'].tolist() == [128, 128]
    assert 'repr_total_loss=' in (tmp_path / 'run' / 'log.txt').read_text()


def small_run(tmp_path, name, rl_type):
    """A (main, create) pair of a short CartPole run of muzero_repr around `rl_type`."""
    if rl_type == 'ppo':
        inner = dict(model=dict(encoder_hidden_sizes=[16]), collect=dict(n_sample=32),
                     learn=dict(epoch_per_collect=2, batch_size=16, learner=dict(log_freq=5, save_ckpt_freq=8)))
    else:
        inner = dict(random_collect_size=64, model=dict(actor_hidden_sizes=[16], critic_hidden_sizes=[16]),
                     collect=dict(n_sample=8), other=dict(replay_buffer=dict(replay_buffer_size=1000)),
                     learn=dict(batch_size=16, learner=dict(log_freq=5, save_ckpt_freq=8)))
    main = dict(
        exp_name=str(tmp_path / name), seed=3,
        env=dict(env_id='CartPole-v1', collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=1,
                 stop_value=None),
        policy=dict(rl_type=rl_type, eval=dict(evaluator=dict(eval_freq=10)), **inner,
                    repr=dict(num_unroll_steps=3, model=dict(latent_size=16, hidden_sizes=[32]),
                              training=dict(interval=2, mini_batch_size=16, mini_batch_length=2,
                                            initial_collect_steps=64))),
    )
    return main, dict(env=dict(type='gym'), env_manager=dict(type='base'), policy=dict(type='muzero_repr'))


def test_discrete_sac_trains_end_to_end(tmp_path):
    policy = train(small_run(tmp_path, 'sac', 'discrete_sac'), max_env_step=200, progress=False).policy
    assert type(policy) is MuZeroReprPolicy and type(policy.inner) is DiscreteSACPolicy
    summary = json.loads((tmp_path / 'sac' / 'summary.json').read_text())
    assert summary['env_step'] == 200 and summary['train_iter'] == (200 - 64) // 8
    # 18 steps of the replay feed (the warm-up's 64 random steps, then 17 collections of 8): 10 model updates
    # (the default) after every 2nd
    assert policy._training.learner.updates == (1 + (200 - 64) // 8) // 2 * 10
    assert 'repr_total_loss=' in (tmp_path / 'sac' / 'log.txt').read_text()


# PPO's run stops after the 3rd step of its feed, half way through the model's interval (2 steps)
@pytest.mark.parametrize('rl_type, feed, stop_at', [('ppo', RolloutFeed, 3), ('discrete_sac', ReplayFeed, 6)])
def test_sigterm_stopped_run_resumes_to_the_same_model_and_replay(tmp_path, monkeypatch, rl_type, feed, stop_at):
    train(small_run(tmp_path, 'whole', rl_type), max_env_step=192, progress=False)
    original, calls = feed.step, []

    def step(self, env_budget):
        calls.append(1)
        if len(calls) == stop_at:
            os.kill(os.getpid(), signal.SIGTERM)  # seen at the top of the loop, after this step
        return original(self, env_budget)
    monkeypatch.setattr(feed, 'step', step)
    with pytest.raises(RunInterrupted):
        train(small_run(tmp_path, 'stopped', rl_type), max_env_step=192, progress=False)
    monkeypatch.undo()
    stopped = load_checkpoint(tmp_path / 'stopped' / 'ckpt' / 'latest.pt')
    assert 0 < stopped['collector']['env_step'] < 192 and 'repr_buffer' in stopped['feed']
    resume(tmp_path / 'stopped', progress=False)
    first = load_checkpoint(tmp_path / 'whole' / 'ckpt' / 'latest.pt')
    second = load_checkpoint(tmp_path / 'stopped' / 'ckpt' / 'latest.pt')
    assert first['policy']['repr']['updates'] > 0
    for part in ('policy', 'collector', 'feed'):
        left, right = ({path: leaf for path, leaf in tree_leaves(state[part]) if isinstance(leaf, torch.Tensor)}
                       for state in (first, second))
        assert left.keys() == right.keys() and left
        for key in left:
            assert torch.equal(left[key], right[key]), f'{part}{key} differs'
