"""On-policy collection on Ray that overlaps learning (collector.mode='async' with PPO), and the exact resume of
a 'sync' Ray run."""
import copy

import pytest
import torch

pytest.importorskip('ray')

from tidal import serial_pipeline_onpolicy  # noqa: E402
from tidal.entry.setup import load_config  # noqa: E402
from tidal.worker.builders import build_policy  # noqa: E402
from tidal.worker.ray_collector import build_ray_collector  # noqa: E402

from whole_runs import Crash, crash_at_step, eval_rows  # noqa: E402  (tests/worker is on sys.path)

pytestmark = pytest.mark.usefixtures('local_ray')  # tests/worker/conftest.py

PPO = ['env.collector_env_num=4', 'policy.collect.n_sample=64', 'env.n_evaluator_episode=1',
       'env.evaluator_env_num=1', 'collector.type=ray', 'collector.num_workers=2']


def log_probs_under(policy, weights, rollout):
    """The log-probabilities of the rollout's actions under `weights` (a copy of the policy acts with them)."""
    actor = copy.deepcopy(policy)
    actor.collect_mode.load_weights(weights)
    with torch.no_grad():
        dist, _ = actor._evaluate(*actor._observation(rollout['obs']))
        return dist.log_prob(rollout['action'])


def perturb(policy, generator):
    """Stands for a learn phase: every weight moves."""
    with torch.no_grad():
        for parameter in policy._model.parameters():
            parameter.add_(0.3 * torch.randn(parameter.shape, generator=generator))


def test_each_rollout_is_one_rollout_behind_and_carries_its_behaviour_log_probs():
    cfg = load_config('cartpole_ppo', 0, [*PPO, 'collector.mode=async'])
    policy = build_policy(cfg)
    collector = build_ray_collector(cfg, policy.collect_mode, torch.device('cpu'), rollout_ahead=True)
    generator = torch.Generator().manual_seed(0)
    try:
        collector.reset(seed=0)
        weights = []  # weights[k]: after k learn phases
        for k in range(4):
            weights.append(copy.deepcopy(policy.collect_mode.weights()))
            rollout = collector.collect(64)
            behaviour = 0 if k == 0 else k - 1  # the first rollout is collected before any learning
            assert torch.allclose(rollout['log_prob'], log_probs_under(policy, weights[behaviour], rollout), atol=1e-5)
            if k > 0:  # ... and not with the learner's current weights
                assert not torch.allclose(rollout['log_prob'], log_probs_under(policy, weights[k], rollout), atol=1e-3)
            assert collector.monitor()['policy_lag'] == (0 if k == 0 else 1)
            assert collector.env_step == 64 * (k + 1)
            perturb(policy, generator)
    finally:
        collector.close()


def test_a_rollout_asked_for_with_fewer_steps_is_cut_to_them():
    cfg = load_config('cartpole_ppo', 0, [*PPO, 'collector.mode=async'])
    policy = build_policy(cfg)
    collector = build_ray_collector(cfg, policy.collect_mode, torch.device('cpu'), rollout_ahead=True)
    try:
        collector.reset(seed=0)
        collector.collect(64)
        rows = collector.collect(20)['action'].shape[0]  # collected ahead with 64 steps, cut to 5 of each env
        assert (rows, collector.env_step) == (20, 84)
    finally:
        collector.close()


def test_async_ppo_run_learns_within_its_budget_and_logs_the_lag(tmp_path):
    run_dir = tmp_path / 'async'
    serial_pipeline_onpolicy('cartpole_ppo', seed=0, max_env_step=400, progress=False,
                             overrides=[*PPO, 'collector.mode=async', 'policy.learn.learner.log_freq=1',
                                        f'exp_name={run_dir}'])
    log = (run_dir / 'log.txt').read_text()
    assert 'run ended: budget of 400 env steps reached' in log
    events = list((run_dir / 'log').rglob('events.*'))
    assert events and all(any(key in path.read_bytes() for path in events)
                          for key in (b'policy_lag', b'learner_wait_seconds'))


def test_a_sync_ray_run_resumes_exactly(tmp_path, monkeypatch):
    from tidal.entry.pipelines import resume
    from tidal.worker.feeds.rollout import RolloutFeed

    overrides = [*PPO, 'policy.learn.learner.save_ckpt_freq=4', 'policy.learn.batch_size=64',
                 'policy.learn.epoch_per_collect=2']
    whole = serial_pipeline_onpolicy('cartpole_ppo', seed=3, max_env_step=512, progress=False,
                                     overrides=[*overrides, f'exp_name={tmp_path / "whole"}'])

    crash_at_step(monkeypatch, RolloutFeed, 6)
    run_dir = tmp_path / 'killed'
    with pytest.raises(Crash):
        serial_pipeline_onpolicy('cartpole_ppo', seed=3, max_env_step=512, progress=False,
                                 overrides=[*overrides, f'exp_name={run_dir}'])
    monkeypatch.undo()
    resumed = resume(run_dir, progress=False)
    log = (run_dir / 'log.txt').read_text()
    assert 'restart their episodes' not in log
    for key, value in whole.model.state_dict().items():
        assert torch.equal(value, resumed.model.state_dict()[key]), key
    assert eval_rows(run_dir) == eval_rows(tmp_path / 'whole')

