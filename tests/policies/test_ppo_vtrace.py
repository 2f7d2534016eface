"""PPO's learn.value_target: 'gae' leaves the rollout as collected, 'vtrace' recomputes its targets with the
learner's weights (lambda-returns on-policy, clipped ratios off-policy), end to end, alone and in a seed group."""
import json

import pytest
import torch

from tidal import serial_pipeline_onpolicy
from tidal.base.errors import ConfigError
from tidal.base.modes import EnvLayout
from tidal.entry.pipelines import train
from tidal.worker.checkpoint import load_checkpoint

from test_ppo import GAMMA, LAM, make_ppo, two_env_rollout  # tests/policies is on the import path

LAYOUT = EnvLayout(num_envs=2, steps=3)
ENVS, N_SAMPLE, BATCH, EPOCHS = 2, 64, 32, 2
SHORT = [f'env.collector_env_num={ENVS}', f'policy.collect.n_sample={N_SAMPLE}', f'policy.learn.batch_size={BATCH}',
         f'policy.learn.epoch_per_collect={EPOCHS}', 'policy.eval.evaluator.eval_freq=8', 'env.n_evaluator_episode=1',
         'env.evaluator_env_num=1', 'env.stop_value=null', 'policy.model.encoder_hidden_sizes=[16]',
         'policy.learn.value_target=vtrace']


def test_gae_value_target_leaves_the_rollout_as_collected():
    torch.manual_seed(0)
    policy = make_ppo()
    assert policy.cfg.learn.value_target == 'gae'
    sample, _, _ = two_env_rollout(policy)
    assert set(sample) == {'obs', 'action', 'log_prob', 'value', 'advantage', 'return'}  # no V-trace columns
    before = {key: column.clone() for key, column in sample.items()}
    with torch.no_grad():  # even with weights that moved on since collection
        for parameter in policy.model.parameters():
            parameter.add_(0.5)
    policy.learn_mode.prepare_rollout(sample, LAYOUT)
    assert sample.keys() == before.keys()
    for key, column in before.items():
        assert torch.equal(sample[key], column), key


def test_vtrace_with_the_collecting_weights_gives_lambda_returns_of_the_current_values():
    torch.manual_seed(0)
    policy = make_ppo(learn=dict(value_target='vtrace'))
    sample, r, next_obs = two_env_rollout(policy)  # env 0 truncated at step 1, env 1 terminated there
    policy.learn_mode.prepare_rollout(sample, LAYOUT)
    assert set(sample) == {'obs', 'action', 'log_prob', 'value', 'advantage', 'return'}
    with torch.no_grad():
        v = policy.model.value(sample['obs']).reshape(3, 2)
        final = policy.model.value(next_obs[1])[0]  # env 0's final obs at its truncation
        last = policy.model.value(next_obs[2])  # the obs the collector acts on next
    assert torch.equal(sample['value'], v.reshape(-1))
    # rho = c = 1: v_s - V_s = delta_s + gamma lam (1 - done_s) (v_{s+1} - V_{s+1}), the lambda-return
    d0_2, d0_1, d0_0 = r[2, 0] + GAMMA * last[0] - v[2, 0], r[1, 0] + GAMMA * final - v[1, 0], \
        r[0, 0] + GAMMA * v[1, 0] - v[0, 0]
    d1_2, d1_1, d1_0 = r[2, 1] + GAMMA * last[1] - v[2, 1], r[1, 1] - v[1, 1], r[0, 1] + GAMMA * v[1, 1] - v[0, 1]
    target = v + torch.stack([torch.stack([d0_0 + GAMMA * LAM * d0_1, d1_0 + GAMMA * LAM * d1_1]),
                              torch.stack([d0_1, d1_1]), torch.stack([d0_2, d1_2])])
    torch.testing.assert_close(sample['return'], target.reshape(-1))
    # advantage r_s + gamma v_{s+1} - V_s: step 0 continues into step 1's target, steps 1 and 2 bootstrap
    advantage = torch.stack([r[0] + GAMMA * target[1] - v[0], torch.stack([d0_1, d1_1]), torch.stack([d0_2, d1_2])])
    torch.testing.assert_close(sample['advantage'], advantage.reshape(-1))


def test_vtrace_clips_the_ratios_of_other_behaviour_weights_and_bootstraps_from_theirs_where_cut_off():
    torch.manual_seed(0)
    rho_clip, c_clip = 1.0, 0.9
    policy = make_ppo(learn=dict(value_target='vtrace', vtrace_rho_clip=rho_clip, vtrace_c_clip=c_clip))
    sample, r, next_obs = two_env_rollout(policy)
    with torch.no_grad():
        behaviour_final = policy.model.value(next_obs[1])[0]  # what collection stored for env 0's truncation
        behaviour_last = policy.model.value(next_obs[2])
        generator = torch.Generator().manual_seed(1)
        for parameter in policy.model.parameters():  # the learner has moved on since collection
            parameter.add_(0.5 * torch.randn(parameter.shape, generator=generator))
        dist, v = policy.model(sample['obs'])
        ratio = torch.exp(dist.log_prob(sample['action']) - sample['log_prob']).reshape(3, 2)
    v = v.reshape(3, 2)
    assert (ratio > 1.0).any() and (ratio < c_clip).any()  # both clips are at work
    rho, c = ratio.clamp(max=rho_clip), LAM * ratio.clamp(max=c_clip)
    policy.learn_mode.prepare_rollout(sample, LAYOUT)
    # the ratio of the clipped loss stays against the behaviour's log-probs; the value clip is around the current V
    assert torch.equal(sample['value'], v.reshape(-1))
    # corr_s = v_s - V_s = rho_s delta_s + gamma c_s (1 - done_s) corr_{s+1}
    d0_2, d0_1, d0_0 = r[2, 0] + GAMMA * behaviour_last[0] - v[2, 0], r[1, 0] + GAMMA * behaviour_final - v[1, 0], \
        r[0, 0] + GAMMA * v[1, 0] - v[0, 0]
    d1_2, d1_1, d1_0 = r[2, 1] + GAMMA * behaviour_last[1] - v[2, 1], r[1, 1] - v[1, 1], \
        r[0, 1] + GAMMA * v[1, 1] - v[0, 1]
    corr_2 = rho[2] * torch.stack([d0_2, d1_2])
    corr_1 = rho[1] * torch.stack([d0_1, d1_1])  # both envs' episodes end at step 1
    corr_0 = rho[0] * torch.stack([d0_0, d1_0]) + GAMMA * c[0] * corr_1
    target = v + torch.stack([corr_0, corr_1, corr_2])
    torch.testing.assert_close(sample['return'], target.reshape(-1))
    advantage = torch.stack([rho[0] * (r[0] + GAMMA * target[1] - v[0]), corr_1, corr_2])
    torch.testing.assert_close(sample['advantage'], advantage.reshape(-1))


@pytest.mark.parametrize('config, extra', [
    ('cartpole_ppo', []),
    ('cartpole_ppg', ['policy.aux.interval=2', 'policy.aux.mini_batch_size=2']),
])
def test_short_vtrace_run_finishes(tmp_path, config, extra):
    serial_pipeline_onpolicy(config, seed=0, max_env_step=256, progress=False,
                             overrides=[*SHORT, *extra, f'exp_name={tmp_path / "run"}'])
    summary = json.loads((tmp_path / 'run' / 'summary.json').read_text())
    assert summary['env_step'] == 256 and summary['train_iter'] == 256 // N_SAMPLE * EPOCHS * (N_SAMPLE // BATCH)


def test_vtrace_seed_group_reads_the_weights_of_every_earlier_update(tmp_path, monkeypatch):
    """Each seed's targets are recomputed once its earlier updates, made for all seeds at once, are in: the
    group's seed 1 is seed 1 alone."""
    monkeypatch.chdir(tmp_path)
    train('cartpole_ppo', seeds=[0, 1], max_env_step=256, progress=False, overrides=[*SHORT, 'exp_name=g'])
    alone = train('cartpole_ppo', seed=1, max_env_step=256, progress=False, overrides=[*SHORT, 'exp_name=a'])
    grouped = load_checkpoint(tmp_path / 'g' / 'seed_1' / 'ckpt' / 'latest.pt')['policy']['model']
    single = load_checkpoint(alone.run_dir / 'ckpt' / 'latest.pt')['policy']['model']
    assert grouped.keys() == single.keys()
    for key in grouped:
        torch.testing.assert_close(grouped[key], single[key], atol=1e-4, rtol=0)


def test_unknown_value_target_is_one_config_error_naming_the_key(tmp_path):
    with pytest.raises(ConfigError) as info:
        serial_pipeline_onpolicy('cartpole_ppo', max_env_step=64, progress=False,
                                 overrides=['policy.learn.value_target=retrace', f'exp_name={tmp_path / "bad"}'])
    assert str(info.value) == "config key 'policy.learn.value_target' must be in {'gae', 'vtrace'}, got 'retrace'"
    assert not (tmp_path / 'bad').exists()
