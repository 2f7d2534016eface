"""Acting for every seed at once: the twin's stacked forward equals each seed's own, draw for draw."""
from __future__ import annotations

from typing import Any

import pytest
import torch

from tidal.base.errors import TidalError
from tidal.entry.setup import load_config
from tidal.policies.ppo import PPOPolicy
from tidal.worker.builders import build_env_manager
from tidal.worker.collector import SampleCollector
from tidal.worker.seed_acting import SeedActor, SeedLinear, seed_twin
from tidal.worker.seed_stack import SeedStack

from seed_stacking import SEEDS, policies  # noqa: E402  (tests/worker is on the import path)


def stacked_against_own(group: list, alone: list, mode: str, obs: list[torch.Tensor]) -> SeedActor:
    """One forward of `mode` for the group's seeds, each seed's draws from its own generator, against the same
    seeds' plain forwards (`alone`, same weights) drawing from generators in the same state."""
    actor = SeedActor(SeedStack(group), [getattr(policy, f'{mode}_mode').steps for policy in group], mode)
    inputs, noises = [], []
    for seed, steps in enumerate(actor.steps):
        inputs.append(steps.prepare(obs[seed]))
        noises.append(steps.draw(inputs[-1], torch.Generator().manual_seed(seed)))
    outputs = actor.act(inputs, noises)
    for seed, policy in enumerate(alone):
        with torch.random.fork_rng():
            torch.manual_seed(0)
            state = torch.Generator().manual_seed(seed).get_state()
            torch.set_rng_state(state)  # the global generator as the seed's stream stands
            own = getattr(policy, f'_forward_{mode}')(obs[seed])
        for key, value in own.items():
            if isinstance(value, torch.Tensor):
                assert torch.allclose(outputs[seed][key].float(), value.float(), atol=1e-6), (mode, seed, key)
    return actor


def test_seed_linear_is_each_seeds_linear():
    layers = [torch.nn.Linear(5, 3) for _ in range(4)]
    stacked = SeedLinear(torch.stack([layer.weight for layer in layers]), torch.stack([layer.bias for layer in layers]))
    x = torch.randn(4, 7, 2, 5)  # seeds, then any batch dimensions
    out = stacked(x)
    assert out.shape == (4, 7, 2, 3)
    for seed, layer in enumerate(layers):
        assert torch.allclose(out[seed], layer(x[seed]), atol=1e-6)


@pytest.mark.parametrize('config', ['cartpole_ppo', 'pendulum_sac'])
def test_stacked_collect_and_eval_forwards_equal_each_seeds_own(config):
    group, alone = policies(config), policies(config)
    dim = 4 if config == 'cartpole_ppo' else 3
    obs = [torch.randn(8, dim, generator=torch.Generator().manual_seed(10 + seed)) for seed in SEEDS]
    for mode in ('collect', 'eval'):
        actor = stacked_against_own(group, alone, mode, obs)
        assert actor.why_per_seed is None and actor.checked


def test_the_twin_reads_the_stack_as_it_is_updated():
    group = policies('pendulum_sac')
    stack = SeedStack(group)
    twin = seed_twin(group[0].model, stack.stacked_of)
    obs = torch.randn(len(SEEDS), 2, 3)
    before = twin.actor(obs)[0]
    stack.tensors['model.actor_body.0.weight'].add_(1.0)  # what a stacked optimizer step does, in place
    assert not torch.allclose(twin.actor(obs)[0], before)
    assert torch.allclose(twin.actor(obs)[0][1], group[1].model.actor(obs[1])[0], atol=1e-6)


def test_a_layer_that_cannot_be_stacked_makes_the_mode_act_per_seed():
    group, alone = policies('breakout_ppo'), policies('breakout_ppo')  # a CNN encoder
    shape = tuple(group[0].cfg.model.obs_shape)
    obs = [torch.rand(2, *shape, generator=torch.Generator().manual_seed(seed)) for seed in SEEDS]
    actor = stacked_against_own(group, alone, 'collect', obs)  # still each seed's own actions
    assert actor.why_per_seed is not None and 'Conv2d' in actor.why_per_seed


def test_a_policy_that_overrides_its_forward_acts_per_seed():
    class OwnCollection(PPOPolicy):
        def _forward_collect(self, obs: Any, **kwargs: Any) -> dict[str, Any]:
            return super()._forward_collect(obs)

    policy = policies('cartpole_ppo', seeds=[0])[0]
    policy.__class__ = OwnCollection
    assert policy.collect_mode.steps is None  # its own forward may act otherwise than PPO's steps
    assert policy.eval_mode.steps is not None


def test_a_handed_sample_of_the_other_kind_is_refused():
    policy = policies('cartpole_ppo', seeds=[0])[0]
    collector = SampleCollector(build_env_manager(load_config('cartpole_ppo'), 'collector'), policy.collect_mode,
                                policy.device)
    collector.reset(seed=0)
    collector.hand(True, {'obs': torch.zeros(8, 4)})
    with pytest.raises(TidalError, match='collected random actions for a feed step that asked for policy ones'):
        collector.collect(8)
    sample = {'obs': torch.zeros(8, 4)}
    collector.hand(False, sample)
    assert collector.collect(8) is sample
    collector.close()
