"""Train and eval modes are the framework's: a policy's networks learn in train mode and act, give a rollout's
values and export in eval mode, with no mode handling in the policy (a BatchNorm and Dropout Q network under DQN);
a seed group trains such a network's seeds in turn, and refuses in one line to stack them."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from tidal.base.errors import ConfigError
from tidal.entry.group_shares import stacking_pays
from tidal.entry.pipelines import train
from tidal.entry.setup import load_config
from tidal.registry import MODEL_REGISTRY
from tidal.worker.builders import build_policy, set_seed

MODEL = 'batchnorm_q_for_tests'


@MODEL_REGISTRY.register(MODEL)
class BatchNormQ(nn.Module):
    """A Q network with BatchNorm and Dropout that writes down the mode of every forward pass."""

    def __init__(self, obs_shape: int, action_shape: int, **ignored: object) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_shape, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.2),
                                 nn.Linear(32, action_shape))
        self.modes: list[bool] = []
        self.action_dim = action_shape

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        self.modes.append(self.training)
        return self.net(obs)


def batchnorm_dqn():
    set_seed(0)
    return build_policy(load_config('cartpole_dqn', overrides=[f'policy.model.type={MODEL}']))


def test_learning_runs_in_train_mode_and_acting_in_eval_mode():
    policy = batchnorm_dqn()
    model, norm = policy.model, policy.model.net[1]
    one_obs = torch.randn(1, 4)  # a single env's observation: BatchNorm in train mode would refuse it
    policy.collect_mode.forward(one_obs)
    assert model.modes == [False] and torch.equal(norm.running_mean, torch.zeros(32))
    greedy = [policy.eval_mode.forward(torch.randn(64, 4, generator=torch.Generator().manual_seed(1)))['action']
              for _ in range(2)]
    assert torch.equal(*greedy)  # no Dropout while acting: the same observations, the same actions
    rows = 16
    batch = dict(obs=torch.randn(rows, 4), action=torch.randint(0, 2, (rows,)), reward=torch.ones(rows),
                 next_obs=torch.randn(rows, 4), terminated=torch.zeros(rows, dtype=torch.bool),
                 truncated=torch.zeros(rows, dtype=torch.bool))
    model.modes.clear()
    policy.learn_mode.forward(batch)
    assert model.modes and all(model.modes)  # the online network in train mode (its batch statistics updated)
    assert not torch.equal(norm.running_mean, torch.zeros(32))
    learned = norm.running_mean.clone()
    model.modes.clear()
    policy.eval_mode.forward(torch.randn(1, 4))
    assert model.modes == [False] and torch.equal(norm.running_mean, learned)


def test_a_batchnorm_network_trains_evaluates_and_resumes_end_to_end(tmp_path):
    result = train('cartpole_dqn', seed=0, max_env_step=400, progress=False,
                   overrides=[f'exp_name={tmp_path / "run"}', f'policy.model.type={MODEL}',
                              'policy.random_collect_size=200', 'env.n_evaluator_episode=1',
                              'env.evaluator_env_num=1'])
    returns = [row['return_mean'] for row in result.evals]
    assert len(returns) >= 2 and all(torch.isfinite(torch.tensor(returns)))


def test_a_seed_group_trains_a_batchnorm_network_in_turn_and_refuses_to_stack_it(tmp_path):
    cfg = load_config('cartpole_dqn', overrides=[f'policy.model.type={MODEL}'])
    assert stacking_pays(cfg) == (False, "its layer 'model.net.1' (BatchNorm1d: it updates its running statistics "
                                         "in place while learning)")
    with pytest.raises(ConfigError, match="cannot stack this policy's updates: its layer 'model.net.1' "
                                          r"\(BatchNorm1d.*set seed_group.share=in_turn"):
        train('cartpole_dqn', seeds=[0, 1], max_env_step=400, progress=False,
              overrides=[f'exp_name={tmp_path / "group"}', f'policy.model.type={MODEL}', 'seed_group.processes=1',
                         'seed_group.share=stacked', 'policy.random_collect_size=200'])
    assert not (tmp_path / 'group').exists()
