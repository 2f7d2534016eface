"""CrossQ: SAC's losses with the critics' target read from the critics' own pass over the joint batch, no target
network, the actor and temperature stepping every actor_update_freq updates; its modes come from the framework."""
from __future__ import annotations

import copy
import json
import math
import re

import numpy as np
import pytest
import torch

from tidal.base.errors import ConfigError
from tidal.entry.export import export_policy
from tidal.entry.group_shares import stacking_pays
from tidal.entry.pipelines import resume, train
from tidal.entry.setup import load_config
from tidal.models.batch_renorm import BatchRenorm
from tidal.worker.builders import build_policy, set_seed

ROWS = 8
SHORT = ('policy.random_collect_size=100', 'policy.learn.batch_size=32', 'env.n_evaluator_episode=1',
         'env.evaluator_env_num=1')


def crossq(*overrides: str):
    set_seed(0)
    return build_policy(load_config('pendulum_crossq', overrides=['policy.model.critic_hidden_sizes=[32,32]',
                                                                   'policy.model.actor_hidden_sizes=[32,32]',
                                                                   *overrides]))


def replayed_batch(seed: int = 0) -> dict[str, torch.Tensor]:
    rng = torch.Generator().manual_seed(seed)
    return dict(obs=torch.randn(ROWS, 3, generator=rng), action=torch.rand(ROWS, 1, generator=rng) * 2 - 1,
                reward=torch.randn(ROWS, generator=rng), next_obs=torch.randn(ROWS, 3, generator=rng),
                terminated=torch.tensor([True, False] * (ROWS // 2)), truncated=torch.zeros(ROWS, dtype=torch.bool))


def test_the_critic_loss_bootstraps_from_the_critics_own_pass_over_the_joint_batch():
    policy = crossq()
    batch = replayed_batch()
    batch['next_noise'] = torch.randn(ROWS, 1, generator=torch.Generator().manual_seed(1))
    model = copy.deepcopy(policy.model)
    policy.parts.use_mode(policy._optimizer_q)
    loss, _ = policy._critic_loss(dict(batch))

    # by hand, on a copy: the next action from the actor as acting reads it, log-probability of the tanh-Gaussian
    model.actor_body.eval()
    mu, log_std = model.actor(batch['next_obs'])
    pre_tanh = mu + log_std.exp() * batch['next_noise']
    next_action = torch.tanh(pre_tanh)
    gaussian = -0.5 * batch['next_noise'] ** 2 - log_std - 0.5 * math.log(2 * math.pi)
    log_prob = (gaussian - torch.log(1 - next_action ** 2 + 1e-6)).sum(-1)
    q = model.critic(torch.cat([batch['obs'], batch['next_obs']]), torch.cat([batch['action'], next_action]))
    current, following = q[:, :ROWS], q[:, ROWS:].detach()
    alpha = 1.0  # the temperature's start
    target = batch['reward'] + 0.99 * (1 - batch['terminated'].float()) * (following.min(0).values - alpha * log_prob)
    expected = ((target - current) ** 2).mean(dim=1).sum()
    torch.testing.assert_close(loss, expected, atol=1e-4, rtol=1e-4)


def test_both_halves_are_normalised_by_the_same_statistics_in_one_pass():
    policy = crossq()
    first_norm = policy.model.critic.q.net[1]
    assert isinstance(first_norm, BatchRenorm)
    seen: list[tuple[int, ...]] = []
    first_norm.register_forward_hook(lambda module, args, out: seen.append(tuple(args[0].shape)))
    batch = replayed_batch()
    policy.learn_mode.forward(batch)
    assert seen == [(2, 2 * ROWS, 4)]  # one pass of both critics over (s, a) and (s', a')
    joint_obs = torch.cat([batch['obs'], batch['next_obs']])
    torch.testing.assert_close(first_norm.running_mean[..., :3], 0.01 * joint_obs.mean(0).expand(2, 1, 3))


def test_each_stage_trains_what_it_steps_and_reads_the_rest_as_acting_does():
    policy = crossq('policy.learn.actor_update_freq=1')
    modes: list[tuple[str, bool]] = []
    for name, norm in (('actor', policy.model.actor_body[0]), ('critic', policy.model.critic.q.net[1])):
        norm.register_forward_hook(lambda module, args, out, name=name: modes.append((name, module.training)))
    policy.learn_mode.forward(replayed_batch())
    # critic step: the actor draws the next actions by its running statistics, the critics learn;
    # actor step: the actor learns, the critics score its actions by their running statistics
    assert modes == [('actor', False), ('critic', True), ('actor', True), ('critic', False)]
    modes.clear()
    policy.collect_mode.forward(torch.randn(1, 3))
    policy.eval_mode.forward(torch.randn(1, 3))
    assert modes == [('actor', False), ('actor', False)]


def test_the_actor_and_temperature_step_every_actor_update_freq_updates():
    policy = crossq('policy.learn.actor_update_freq=3')
    actor = [p.detach().clone() for p in policy.model.actor_parameters()]
    critic = [p.detach().clone() for p in policy.model.critic.parameters()]
    first = policy.learn_mode.forward(replayed_batch(0))
    assert float(policy._temperature.value) == pytest.approx(1.0)
    assert all(torch.equal(a, b) for a, b in zip(actor, policy.model.actor_parameters()))
    assert not all(torch.equal(a, b) for a, b in zip(critic, policy.model.critic.parameters()))
    # before the first actor step the update reports its values as they stand: no loss yet, alpha at its start
    assert float(first['policy_loss']) == 0.0 and float(first['alpha']) == pytest.approx(1.0)
    policy.learn_mode.forward(replayed_batch(1))
    third = policy.learn_mode.forward(replayed_batch(2))
    assert not all(torch.equal(a, b) for a, b in zip(actor, policy.model.actor_parameters()))
    assert float(third['policy_loss']) != 0.0 and float(policy._temperature.value) < 1.0  # stepped with the actor
    fourth = policy.learn_mode.forward(replayed_batch(3))
    assert torch.equal(fourth['policy_loss'], third['policy_loss'])


def test_there_is_no_target_network_and_the_checkpoint_keeps_the_clock():
    policy = crossq()
    assert {part.kind for part in policy.parts} == {'network', 'scalar', 'optimizer', 'counter'}
    assert list(policy.learn_mode.state_dict()) == ['model', 'optimizer_q', 'temperature', 'optimizer_policy',
                                                    'updates']
    optimizers = policy.learn_optimizers()
    assert len(optimizers) == 2 and all(isinstance(o, torch.optim.Adam) for o in optimizers)
    assert policy._optimizer_q.param_groups[0]['betas'] == (0.5, 0.999)


def test_a_target_network_setting_is_refused_in_one_line_rather_than_ignored():
    with pytest.raises(ConfigError, match="policy.learn.target_theta is 0.005, but policy 'crossq' has no target "
                                          "network to move; remove the key"):
        crossq('policy.learn.target_theta=0.005')


def test_crossq_refuses_the_multi_agent_form_in_one_line():
    with pytest.raises(Exception, match="policy 'crossq' has no multi-agent form; config key 'policy.multi_agent'"):
        crossq('policy.multi_agent=True')


def test_a_seed_group_trains_crossq_in_turn(tmp_path):
    cfg = load_config('pendulum_crossq')
    assert stacking_pays(cfg) == (False, "its layer 'model.actor_body.0' (BatchRenorm: it updates its running "
                                         "statistics in place while learning)")
    group = train('pendulum_crossq', seeds=[0, 1], max_env_step=150, progress=False,
                  overrides=[f'exp_name={tmp_path / "group"}', 'seed_group.processes=1', *SHORT])
    assert [run.evals[-1]['env_step'] for run in group.runs] == [150, 150]
    assert json.loads((tmp_path / 'group' / 'group.json').read_text())['stacked'] is False


def test_a_short_run_learns_resumes_and_exports_as_its_eval_mode_acts(tmp_path):
    overrides = [f'exp_name={tmp_path / "run"}', *SHORT, 'policy.eval.evaluator.eval_freq=100']
    first = train('pendulum_crossq', seed=0, max_env_step=250, progress=False, overrides=overrides)
    assert len(first.evals) >= 2 and all(np.isfinite(row['return_mean']) for row in first.evals)
    resumed = resume(tmp_path / 'run', progress=False, max_env_step=400)
    assert resumed is not None and resumed.evals[-1]['env_step'] == 400
    summary = export_policy(tmp_path / 'run', 'torchscript').summary()
    # the exported actor normalises by its running statistics, as the eval mode acts
    parity = re.search(r'parity: max \|exported - eval mode\| = (\S+) over 128 real observations', summary)
    assert parity is not None and float(parity.group(1)) <= 1e-5, summary
