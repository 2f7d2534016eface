"""A policy's declared parts and what follows from them: the checkpoint's learn state and weights, what a seed
group stacks, the optimizers, the statistics acting updates."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from tidal.base.parts import Parts
from tidal.entry.setup import load_config
from tidal.models import TargetNetwork, Temperature
from tidal.policies.common import UpdateCount
from tidal.rl_utils.normalizer import RunningMeanStd
from tidal.worker.builders import build_policy, set_seed


def declared() -> tuple[Parts, dict]:
    parts = Parts()
    model = parts.network('model', nn.Linear(3, 2), acting=True)
    objects = dict(
        model=model,
        target=parts.target('target', TargetNetwork(model)),
        temperature=parts.scalar('temperature', Temperature(0.2)),
        switch=parts.scalar('switch_temperature', Temperature(0.1), acting=True),
        optimizer=parts.optimizer('optimizer', torch.optim.SGD(model.parameters(), lr=0.1)),
        updates=parts.counter('updates', UpdateCount()),
        stats=parts.statistics('obs_rms', RunningMeanStd((3,), 'cpu')),
        old=parts.network('old_model', nn.Linear(3, 2), saved=False))
    return parts, objects


def test_a_declaration_returns_the_part_and_derives_each_list_from_it():
    parts, objects = declared()
    assert parts.weights() == {'model': objects['model'], 'switch_temperature': objects['switch'],
                               'obs_rms': objects['stats']}
    assert parts.learn_state() == {'target': objects['target'].net, 'temperature': objects['temperature'],
                                   'optimizer': objects['optimizer'], 'updates': objects['updates']}
    assert parts.stacked() == {'model': objects['model'], 'target': objects['target'],
                               'temperature': objects['temperature'], 'switch_temperature': objects['switch'],
                               'old_model': objects['old']}
    assert parts.optimizers() == [objects['optimizer']]
    assert parts.of('statistics') == {'obs_rms': objects['stats']}


def test_a_key_declared_twice_or_an_unknown_kind_is_refused_naming_it():
    parts, _ = declared()
    with pytest.raises(ValueError, match="part 'updates' is declared twice"):
        parts.counter('updates', UpdateCount())
    with pytest.raises(ValueError, match="part 'clock': unknown kind 'timer'"):
        parts.declare('clock', 'timer', object())


@pytest.mark.parametrize('config, weights, learn_state', [
    ('pendulum_sac', ['model'], ['optimizer_q', 'temperature', 'optimizer_policy', 'target_critic']),
    ('pendulum_taac', ['switch_temperature', 'model'], ['temperature', 'optimizer', 'target_critic']),
    ('cartpole_ppo', ['reward_rms', 'model'], ['optimizer']),
    ('cartpole_ppg', ['reward_rms', 'model'], ['optimizer', 'aux_optimizer']),
    ('cartpole_dqn', ['model'], ['optimizer', 'target', 'updates']),
])
def test_a_policys_weights_and_learn_state_are_its_declared_parts(config, weights, learn_state):
    set_seed(0)
    policy = build_policy(load_config(config))
    assert list(policy.weights()) == weights
    assert list(policy.parts.learn_state()) == learn_state
    assert list(policy.learn_mode.state_dict()) == [*weights, *learn_state]
    assert set(policy.parts.stacked()) >= {'model'} | {key for key in learn_state
                                                         if 'optimizer' not in key and key != 'updates'}


def test_an_optimizer_stepping_a_tensor_no_part_holds_stops_the_build_in_one_line():
    from tidal.base.errors import TidalError
    from tidal.policies.dqn import DQNPolicy

    class Careless(DQNPolicy):
        def _init_learn(self):
            super()._init_learn()
            self._alpha = Temperature(0.2)  # learned, but not declared: no seed group would stack it
            self.parts.optimizer('alpha_optimizer', torch.optim.Adam(self._alpha.parameters()))
    with pytest.raises(TidalError, match=r"policy 'dqn': its optimizer 'alpha_optimizer' steps a tensor that no "
                                         r"declared part holds \(parameter 0 of its group 0, shape \[\]\); declare "
                                         r"the module that holds it"):
        Careless(load_config('cartpole_dqn').policy)


class Holder(nn.Module):
    """An actor and a critic in one module, with a Dropout of its own (no parameters) beside them."""

    def __init__(self) -> None:
        super().__init__()
        self.actor = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
        self.critic = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.1))
        self.dropout = nn.Dropout(0.1)


def test_a_stage_trains_what_its_optimizer_steps_and_the_rest_reads_as_acting_does():
    parts = Parts()
    model = parts.network('model', Holder())
    target = parts.target('target', TargetNetwork(model.critic))
    actor_step = parts.optimizer('actor', torch.optim.SGD(model.actor.parameters(), lr=0.1))
    critic_step = parts.optimizer('critic', torch.optim.SGD(model.critic.parameters(), lr=0.1))
    parts.use_mode(actor_step)
    assert model.actor[1].training and not model.critic[1].training and not target.net[1].training
    assert model.dropout.training  # no parameters of its own: it follows the model, which the stage steps
    parts.use_mode(critic_step)
    assert not model.actor[1].training and model.critic[1].training and not target.net[1].training
    parts.use_mode(False)
    assert not any(module.training for module in [*model.modules(), *target.modules()])
    learning = parts.in_mode(lambda: model.actor[1].training and target.net[1].training, True)
    assert learning()


def test_a_random_stream_and_a_helpers_parts_round_trip_through_the_state():
    helper = Parts()
    generator = helper.stream('generator', torch.Generator().manual_seed(3))
    helper.counter('updates', UpdateCount(as_int=True))
    parts = Parts()
    parts.network('model', nn.Linear(2, 2), acting=True)
    parts.include(helper)
    state = parts.state_dict()
    assert list(state) == ['model', 'generator', 'updates'] and state['updates'] == 0
    first = torch.rand(3, generator=generator)
    parts.load_state_dict(state)
    assert torch.equal(torch.rand(3, generator=generator), first)  # the stream starts again where it was saved


def test_a_mode_is_set_again_after_another_holder_of_the_same_modules_changed_it():
    net = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1))
    held, holder = Parts(), Parts()  # a wrapped policy's parts and its wrapper's
    held.network('model', net)
    holder.network('model', nn.ModuleDict({'rl': net}))
    held.use_mode(True)
    holder.use_mode(False)
    held.use_mode(True)
    assert net[1].training
