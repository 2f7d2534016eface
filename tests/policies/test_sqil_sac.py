import math

import pytest
import torch

from tidal.policies import SACPolicy, SQILSACPolicy


def make_policy(cls=SQILSACPolicy, **learn):
    cfg = cls.default_config()
    cfg.model.update(obs_shape=3, action_shape=1, actor_hidden_sizes=[16], critic_hidden_sizes=[16])
    cfg.learn.update(learn)
    torch.manual_seed(0)
    return cls(cfg)


def half_and_half_batch(size=8):
    generator = torch.Generator().manual_seed(0)
    return dict(obs=torch.randn(size, 3, generator=generator), action=torch.rand(size, 1, generator=generator),
                reward=torch.full((size,), 123.0), next_obs=torch.randn(size, 3, generator=generator),
                terminated=torch.zeros(size, dtype=torch.bool), truncated=torch.zeros(size, dtype=torch.bool),
                expert=torch.arange(size) >= size // 2)


def test_sqil_relabels_expert_rows_one_and_agent_rows_zero(monkeypatch):
    seen = {}
    original = SACPolicy._critic_loss

    def spy(self, batch):  # the rewards SAC's critic targets are built from
        seen['reward'] = batch['reward'].clone()
        return original(self, batch)

    monkeypatch.setattr(SACPolicy, '_critic_loss', spy)
    make_policy().learn_mode.forward(half_and_half_batch())
    assert seen['reward'].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]


def test_sqil_relabels_every_step_of_an_nstep_window_by_its_first(monkeypatch):
    seen = {}
    original = SACPolicy._critic_loss

    def spy(self, batch):
        seen['nstep_reward'] = batch['nstep_reward'].clone()
        return original(self, batch)

    monkeypatch.setattr(SACPolicy, '_critic_loss', spy)
    batch = half_and_half_batch(4)
    batch.update(nstep_reward=torch.full((4, 3), 123.0), nstep_len=torch.tensor([1, 3, 2, 3]))
    make_policy().learn_mode.forward(batch)
    assert seen['nstep_reward'].tolist() == [[0, 0, 0], [0, 0, 0], [1, 1, 0], [1, 1, 1]]


def test_sqil_learn_step_equals_sac_on_the_relabelled_batch():
    """Same weights, same seed: SQIL's update is SAC's update on rewards 0/1, nothing else."""
    batch = half_and_half_batch()
    sqil = make_policy(monitor_cos_similarity=False)
    sac = make_policy(SACPolicy)
    sac.model.load_state_dict(sqil.model.state_dict())
    torch.manual_seed(5)
    sqil_info = sqil.learn_mode.forward(batch)
    torch.manual_seed(5)
    sac_info = sac.learn_mode.forward({**batch, 'reward': batch['expert'].float()})
    for name in ('critic_loss', 'policy_loss', 'alpha_loss'):
        assert float(sqil_info[name]) == pytest.approx(float(sac_info[name]), rel=1e-6)


def test_sqil_monitors_agent_and_expert_td_errors_and_gradient_similarity():
    policy = make_policy()
    info = policy.learn_mode.forward(half_and_half_batch())
    priority = info['priority']
    assert float(info['agent_td_error']) == pytest.approx(priority[:4].mean().item())
    assert float(info['expert_td_error']) == pytest.approx(priority[4:].mean().item())
    assert -1.0 <= float(info['cos_similarity']) <= 1.0
    assert all(math.isfinite(float(info[name])) for name in policy.learn_mode.monitor_vars())


def test_gradient_similarity_monitor_does_not_change_the_update():
    batch = half_and_half_batch()
    with_monitor, without = make_policy(), make_policy(monitor_cos_similarity=False)
    torch.manual_seed(1)
    with_monitor.learn_mode.forward(batch)
    torch.manual_seed(1)
    without.learn_mode.forward(batch)
    for a, b in zip(with_monitor.model.parameters(), without.model.parameters()):
        assert torch.allclose(a, b, atol=1e-7)
    assert 'cos_similarity' not in without.learn_mode.monitor_vars()
