"""SQIL on SQL: the relabelled rewards (one-step and n-step), an update equal to SQL's on them, and the mean TD
error of each half of the batch."""
import pytest
import torch

from tidal.policies import SQILPolicy, SQLPolicy


def make_policy(cls=SQILPolicy):
    cfg = cls.default_config()
    cfg.model.update(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16], dueling=False)
    torch.manual_seed(0)
    return cls(cfg)


def half_and_half_batch(size=8):
    generator = torch.Generator().manual_seed(0)
    return dict(obs=torch.randn(size, 4, generator=generator), action=torch.randint(0, 2, (size,), generator=generator),
                reward=torch.full((size,), 123.0), next_obs=torch.randn(size, 4, generator=generator),
                terminated=torch.zeros(size, dtype=torch.bool), truncated=torch.zeros(size, dtype=torch.bool),
                expert=torch.arange(size) >= size // 2)


def test_sqil_relabels_expert_rows_one_and_agent_rows_zero(monkeypatch):
    seen = {}
    original = SQLPolicy._q_loss

    def spy(self, batch):  # the rewards SQL's soft targets are built from
        seen['reward'] = batch['reward'].clone()
        return original(self, batch)

    monkeypatch.setattr(SQLPolicy, '_q_loss', spy)
    make_policy().learn_mode.forward(half_and_half_batch())
    assert seen['reward'].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]


def test_sqil_relabels_every_step_of_an_nstep_window_by_its_first():
    batch = half_and_half_batch(4)
    batch.update(nstep_reward=torch.full((4, 3), 123.0), nstep_len=torch.tensor([1, 3, 2, 3]))
    make_policy().learn_mode.forward(batch)
    assert batch['nstep_reward'].tolist() == [[0, 0, 0], [0, 0, 0], [1, 1, 0], [1, 1, 1]]


def test_sqil_learn_step_equals_sql_on_the_relabelled_batch():
    batch = half_and_half_batch()
    sqil, sql = make_policy(), make_policy(SQLPolicy)
    sql.model.load_state_dict(sqil.model.state_dict())
    sql._target.net.load_state_dict(sqil._target.net.state_dict())
    sqil_info = sqil.learn_mode.forward(dict(batch))
    sql_info = sql.learn_mode.forward({**batch, 'reward': batch['expert'].float()})
    for name in ('total_loss', 'q_value', 'target_q_value'):
        assert float(sqil_info[name]) == float(sql_info[name])
    assert all(torch.equal(a, b) for a, b in zip(sqil.model.parameters(), sql.model.parameters()))


def test_sqil_monitors_the_td_error_of_each_half():
    policy = make_policy()
    info = policy.learn_mode.forward(half_and_half_batch())
    assert float(info['agent_td_error']) == pytest.approx(info['priority'][:4].mean().item())
    assert float(info['expert_td_error']) == pytest.approx(info['priority'][4:].mean().item())
    assert {'agent_td_error', 'expert_td_error'} <= set(policy.learn_mode.monitor_vars())
