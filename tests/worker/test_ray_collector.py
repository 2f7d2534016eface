"""The Ray collector: the local collector's transition contract, equal runs, faults, one-line errors.

Ray starts once for this module (2 CPUs); each test builds its own workers.
"""
import json
import os
import subprocess
import sys
import time

import pytest
import torch

ray = pytest.importorskip('ray')

from ray_test_envs import FAULTY_ID  # noqa: E402  (tests/worker is on sys.path, and on the workers')

from tidal import serial_pipeline, serial_pipeline_onpolicy  # noqa: E402
from tidal.entry.setup import load_config  # noqa: E402
from tidal.worker.builders import build_env_manager, build_policy  # noqa: E402
from tidal.base.errors import ConfigError  # noqa: E402
from tidal.worker.collector import SampleCollector  # noqa: E402
from tidal.worker.ray_collector import build_ray_collector  # noqa: E402
from tidal.worker.ray_pool import WorkerError  # noqa: E402
from tidal.worker.rng import stream_seed  # noqa: E402

SMALL = ['policy.model.actor_hidden_sizes=[16]', 'policy.model.critic_hidden_sizes=[16]',
         'policy.learn.batch_size=16', 'env.n_evaluator_episode=1', 'env.evaluator_env_num=1']
FAULTY = ['import_names=[ray_test_envs]', f'env.env_id={FAULTY_ID}', 'env.stop_value=null']


from whole_runs import Crash, crash_at_step  # noqa: E402  (tests/worker is on sys.path)

pytestmark = pytest.mark.usefixtures('local_ray')  # tests/worker/conftest.py


def config(*overrides):
    return load_config('pendulum_sac', 0, [*SMALL, *overrides])


def assert_same(a, b):
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], dict):
            assert_same(a[key], b[key])
        else:
            assert torch.equal(a[key], b[key]), key


def test_one_worker_collects_exactly_what_the_local_collector_does():
    cfg = config('env.collector_env_num=3', 'env.env_kwargs={max_episode_steps: 7}',
                 'collector.type=ray', 'collector.num_workers=1')
    policy = build_policy(cfg)
    local = SampleCollector(build_env_manager(cfg, 'collector'), policy.collect_mode, policy.device)
    local.reset(seed=stream_seed(cfg.seed))
    remote = build_ray_collector(cfg, policy.collect_mode, policy.device)
    try:
        remote.reset()
        for random in (True, False, False):  # the warm-up's random actions, then the policy's
            assert_same(local.collect(30, random=random), remote.collect(30, random=random))
        assert remote.env_step == local.env_step == 90
        assert sorted(remote.episodes.lengths) == sorted(local.episodes.lengths) == [7] * 12
    finally:
        remote.close()
        local.close()


def test_two_workers_keep_the_transition_contract_on_truncations():
    # Pendulum cut every 5 steps: truncated, never terminated, next_obs the final obs, rows step-major
    cfg = config('env.collector_env_num=4', 'env.env_kwargs={max_episode_steps: 5}',
                 'collector.type=ray', 'collector.num_workers=2')
    policy = build_policy(cfg)
    remote = build_ray_collector(cfg, policy.collect_mode, policy.device)
    try:
        remote.reset()
        sample = remote.collect(48)
    finally:
        remote.close()
    envs, steps = 4, 12
    assert sample['obs'].shape == (envs * steps, 3)
    truncated = sample['truncated'].reshape(steps, envs)
    assert not sample['terminated'].any()
    assert truncated.sum().item() == envs * 2  # steps 5 and 10 of every env
    assert truncated[4].all() and truncated[9].all()
    obs, next_obs = sample['obs'].reshape(steps, envs, 3), sample['next_obs'].reshape(steps, envs, 3)
    running = ~truncated[:-1]
    assert torch.equal(next_obs[:-1][running], obs[1:][running])  # each env's rows follow on
    assert not torch.isclose(next_obs[:-1][~running], obs[1:][~running]).all(dim=-1).any()  # a reset between
    # the envs are numbered as the local collector numbers them: the same seeds, the same first obs
    local_env = build_env_manager(cfg, 'collector')
    first = torch.as_tensor(local_env.reset(seed=stream_seed(cfg.seed)))
    local_env.close()
    assert torch.equal(obs[0], first)


def test_sync_ray_run_equals_the_local_run(tmp_path):
    common = [*SMALL, 'policy.random_collect_size=64', 'env.collector_env_num=2',
              'policy.collect.n_sample=32', 'policy.learn.update_per_collect=4']
    local = serial_pipeline('pendulum_sac', seed=5, max_env_step=256, progress=False,
                            overrides=[*common, f'exp_name={tmp_path / "local"}'])
    remote = serial_pipeline('pendulum_sac', seed=5, max_env_step=256, progress=False,
                             overrides=[*common, f'exp_name={tmp_path / "ray"}', 'collector.type=ray',
                                        'collector.num_workers=1'])
    assert_same(local.model.state_dict(), remote.model.state_dict())


def test_async_run_learns_and_logs_staleness(tmp_path):
    run_dir = tmp_path / 'async'
    serial_pipeline('pendulum_sac', seed=0, max_env_step=600, progress=False,
                    overrides=[*SMALL, 'policy.random_collect_size=100', 'env.collector_env_num=2',
                               'policy.collect.n_sample=50', 'policy.learn.learner.log_freq=1',
                               'collector.type=ray', 'collector.mode=async', f'exp_name={run_dir}'])
    log = (run_dir / 'log.txt').read_text()
    assert 'run ended: budget of 600 env steps reached' in log
    events = list((run_dir / 'log').rglob('events.*'))
    assert events and any(b'staleness_max' in path.read_bytes() for path in events)


def test_ppo_collects_on_ray_workers(tmp_path):
    policy = serial_pipeline_onpolicy('cartpole_ppo', seed=0, max_env_step=512, progress=False,
                                      overrides=['env.collector_env_num=4', 'policy.collect.n_sample=256',
                                                 'collector.type=ray', 'collector.num_workers=2',
                                                 'env.n_evaluator_episode=1', 'env.evaluator_env_num=1',
                                                 f'exp_name={tmp_path / "ppo"}'])
    assert policy is not None


def test_a_killed_worker_is_restarted_and_the_run_finishes(tmp_path):
    marker = tmp_path / 'killed'
    run_dir = tmp_path / 'run'
    serial_pipeline('pendulum_sac', seed=0, max_env_step=400, progress=False,
                    overrides=[*SMALL, *FAULTY, 'policy.random_collect_size=100', 'env.collector_env_num=2',
                               'policy.collect.n_sample=50', 'collector.type=ray',
                               f'env.env_kwargs={{max_episode_steps: 20, fail: exit_once, fail_at: 80, marker: "{marker}", spare_pid: {os.getpid()}}}',
                               f'exp_name={run_dir}'])
    assert marker.exists()
    log = (run_dir / 'log.txt').read_text()
    assert 'run ended: budget of 400 env steps reached' in log
    restarted = [line for line in log.splitlines() if 'failed at env step' in line]
    assert len(restarted) == 1 and 'Ray worker' in restarted[0] and 'collector envs' in restarted[0]


def test_an_env_that_raises_once_is_restarted_and_named(tmp_path):
    marker = tmp_path / 'raised'
    run_dir = tmp_path / 'run'
    serial_pipeline('pendulum_sac', seed=0, max_env_step=300, progress=False,
                    overrides=[*SMALL, *FAULTY, 'policy.random_collect_size=100', 'env.collector_env_num=2',
                               'collector.type=ray', 'collector.num_workers=1',
                               f'env.env_kwargs={{max_episode_steps: 20, fail: raise_once, fail_at: 60, marker: "{marker}", spare_pid: {os.getpid()}}}',
                               f'exp_name={run_dir}'])
    line = next(line for line in (run_dir / 'log.txt').read_text().splitlines() if 'failed at env step' in line)
    assert "Ray worker 0 (collector envs 0..1)" in line
    assert f"env '{FAULTY_ID}'" in line and 'step fails on purpose' in line


@pytest.mark.parametrize('config_name, extra', [
    ('pendulum_sac', [*SMALL, 'policy.random_collect_size=100']),  # Ape-X: the first batch handed in
    ('pendulum_ppo', ['policy.collect.n_sample=64', 'policy.learn.batch_size=32', 'env.n_evaluator_episode=1',
                      'env.evaluator_env_num=1']),  # rollouts collected ahead
])
def test_async_collection_restarts_a_worker_whose_env_raised(tmp_path, config_name, extra):
    run_dir = tmp_path / 'run'
    entry = serial_pipeline if config_name == 'pendulum_sac' else serial_pipeline_onpolicy
    entry(config_name, seed=0, max_env_step=400, progress=False, overrides=[
        *FAULTY, *extra, 'env.collector_env_num=2', 'collector.type=ray', 'collector.num_workers=2',
        'collector.mode=async', f'exp_name={run_dir}',
        f'env.env_kwargs={{max_episode_steps: 20, fail: raise_once, fail_at: 150, marker: "{tmp_path / "raised"}", '
        f'spare_pid: {os.getpid()}}}'])
    failures = [line for line in (run_dir / 'log.txt').read_text().splitlines() if 'failed at env step' in line]
    assert len(failures) == 1 and 'step fails on purpose; restarting it (1 of 3 in a row)' in failures[0]
    assert json.loads((run_dir / 'summary.json').read_text())['env_step'] == 400


def test_an_env_that_always_fails_to_reset_stops_after_bounded_retries():
    cfg = config(*FAULTY, f'env.env_kwargs={{max_episode_steps: 20, fail: reset_always, spare_pid: {os.getpid()}}}', 'collector.type=ray', 'collector.num_workers=1',
                 'collector.max_restarts=2', 'env.collector_env_num=1')
    policy = build_policy(cfg)
    remote = build_ray_collector(cfg, policy.collect_mode, policy.device)
    try:
        with pytest.raises(WorkerError) as err:
            remote.reset()
    finally:
        remote.close()
    message = str(err.value)
    assert '\n' not in message
    assert '3 times in a row' in message and 'collector.max_restarts=2' in message
    assert 'reset fails on purpose' in message


def test_no_cluster_at_the_address_is_one_line(tmp_path):
    run = subprocess.run([sys.executable, '-m', 'tidal', 'train', 'pendulum_sac', '--max-env-step', '2000',
                          '--no-progress', '--set', 'collector.type=ray', '--set', 'collector.num_workers=1',
                          '--set', 'ray.address=127.0.0.1:9'],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    errors = [line for line in run.stderr.splitlines() if line.startswith('tidal: error:')]
    assert errors == ["tidal: error: no Ray cluster at ray.address='127.0.0.1:9' (Connection refused); start one "
                      "with `ray start --head` or leave ray.address empty for a local Ray"]
    assert 'Traceback' not in run.stderr


@pytest.mark.parametrize('overrides, message', [
    (['collector.num_workers=3', 'env.collector_env_num=4'],
     'collector.num_workers=3 does not divide env.collector_env_num=4'),
    (['collector.mode=async', 'policy.collect.unroll_len=2'], "collector.mode='async' hands in one worker's"),
])
def test_ray_collector_config_errors(overrides, message):
    with pytest.raises(ConfigError, match=message.replace('.', r'\.').replace('(', r'\(')):
        config('collector.type=ray', *overrides)


def test_async_takes_on_policy_learning_with_sequences_refused():
    assert load_config('cartpole_ppo', 0, ['collector.type=ray', 'collector.mode=async']).collector.mode == 'async'
    with pytest.raises(ConfigError, match="unroll_len > 1"):
        load_config('pendulum_taac', 0, ['collector.type=ray', 'collector.mode=async'])


def test_async_without_ray_workers_is_refused_rather_than_run_in_step():
    with pytest.raises(ConfigError, match=r"collector\.mode='async' overlaps Ray workers' collection with learning, "
                                          r"but collector\.type='local'"):
        load_config('cartpole_ppo', 0, ['collector.mode=async'])


def test_muzero_refuses_ray_collection():
    with pytest.raises(ConfigError, match="keeps learning state in its collect mode"):
        load_config('cartpole_muzero', 0, ['collector.type=ray'])


def test_workers_are_gone_after_close():
    cfg = config('collector.type=ray', 'collector.num_workers=1', 'env.collector_env_num=1')
    remote = build_ray_collector(cfg, build_policy(cfg).collect_mode, torch.device("cpu"))
    actor = remote.pool.actors[0]
    remote.close()
    deadline = time.monotonic() + 60
    with pytest.raises(ray.exceptions.RayActorError):
        while time.monotonic() < deadline:  # the kill takes effect shortly after close returns
            ray.get(actor.ping.remote(), timeout=60)
            time.sleep(0.2)



def test_a_killed_driver_resumes_from_its_last_checkpoint(tmp_path, monkeypatch):
    from tidal.entry.pipelines import resume
    from tidal.worker.feeds.replay import ReplayFeed

    crash_at_step(monkeypatch, ReplayFeed, 6)
    run_dir = tmp_path / 'run'
    with pytest.raises(Crash):
        serial_pipeline('pendulum_sac', seed=0, max_env_step=400, progress=False,
                        overrides=[*SMALL, 'policy.random_collect_size=100', 'env.collector_env_num=2',
                                   'policy.collect.n_sample=50', 'policy.learn.learner.save_ckpt_freq=20',
                                   'collector.type=ray', 'collector.num_workers=2', f'exp_name={run_dir}'])
    monkeypatch.undo()
    resume(run_dir, progress=False)
    log = (run_dir / 'log.txt').read_text()
    assert 'resumed at env step' in log and 'restart their episodes' not in log  # sync: the workers' envs saved
    assert log.rstrip().endswith('run ended: budget of 400 env steps reached')


def test_a_policy_error_on_a_worker_stops_the_run_at_once_naming_it(tmp_path):
    """A broken contract of the policy fails the same way after any restart: none is made."""
    with pytest.raises(WorkerError) as err:
        serial_pipeline_onpolicy('cartpole_ppo', seed=0, max_env_step=256, progress=False,
                                 overrides=['import_names=[ray_test_policies]',
                                            'policy.type=test_ray_grid_advantage_ppo',
                                            'env.collector_env_num=2', 'policy.collect.n_sample=64',
                                            'collector.type=ray', 'collector.num_workers=1',
                                            'env.n_evaluator_episode=1', 'env.evaluator_env_num=1',
                                            f'exp_name={tmp_path / "run"}'])
    assert str(err.value).startswith('Ray worker 0 (collector envs 0..1) failed at env step 0: policy '
                                     "'test_ray_grid_advantage_ppo': _get_train_sample returned column 'advantage'")
    assert 'restarting' not in (tmp_path / 'run' / 'log.txt').read_text()
