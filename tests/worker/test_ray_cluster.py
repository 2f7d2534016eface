"""Which Ray a run starts or joins (ray.address) beside a cluster that `ray start --head` put on record.

The head runs in a Ray temp folder of the test's own (RAY_TMPDIR), so its record is seen by these tests'
runs alone, and its processes are killed as one process group at teardown, whatever the test did.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip('ray')

SMALL = ['policy.model.actor_hidden_sizes=[16]', 'policy.model.critic_hidden_sizes=[16]',
         'policy.learn.batch_size=16', 'env.n_evaluator_episode=1', 'env.evaluator_env_num=1',
         'env.env_kwargs={max_episode_steps: 20}', 'policy.random_collect_size=40', 'policy.collect.n_sample=20',
         'env.collector_env_num=1', 'env.stop_value=null', 'collector.type=ray', 'collector.num_workers=1']
# a run of 80 env steps on one Ray worker, then where its Ray is: the head's GCS address and CPUs
RUN_AND_SAY_WHERE = """
import json, sys
import ray
from tidal import serial_pipeline
serial_pipeline('pendulum_sac', seed=0, max_env_step=80, progress=False, overrides=sys.argv[1:])
print(json.dumps({'gcs_address': ray.get_runtime_context().gcs_address, 'cpus': ray.cluster_resources()['CPU']}))
"""


class Head:
    """A Ray head started with `ray start --head --num-cpus 1` in `temp_dir`, its processes in a group of their own."""

    def __init__(self, temp_dir: str) -> None:
        self.env = {**os.environ, 'RAY_TMPDIR': temp_dir}
        self.record = Path(temp_dir) / 'ray' / 'ray_current_cluster'
        start = subprocess.Popen([sys.executable, '-m', 'ray.scripts.scripts', 'start', '--head', '--num-cpus', '1',
                                  '--port', '0', '--include-dashboard', 'false', '--disable-usage-stats'],
                                 env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
        self.group = start.pid  # `ray start` leads the group; the head's processes stay in it once it exits
        _, stderr = start.communicate(timeout=120)
        assert start.returncode == 0, stderr
        self.address = self.record.read_text().strip()

    def kill(self) -> None:
        """SIGKILL to every process of the head, as a crash or a reboot ends them; the record stays."""
        deadline = time.monotonic() + 30
        try:
            while time.monotonic() < deadline:
                os.killpg(self.group, signal.SIGKILL)
                time.sleep(0.2)
        except ProcessLookupError:  # the group is gone: no process of the head is left
            return
        raise AssertionError(f'the Ray head (process group {self.group}) outlived SIGKILL')


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


@pytest.fixture(scope='module')
def ray_head():
    """A running head on record for the module's runs, in a Ray temp folder of the module's own (short enough
    for Ray's socket paths); killed at teardown whatever the tests did."""
    folder = tempfile.mkdtemp(prefix='ray')
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv('RAY_TMPDIR', folder)
        head = Head(folder)
        try:
            yield head
        finally:
            head.kill()
            shutil.rmtree(folder, ignore_errors=True)


def run_and_say_where(tmp_path, address, timeout=180):
    """The short run on Ray of `RUN_AND_SAY_WHERE` with `ray.address=address`, from a folder of its own."""
    result = subprocess.run([sys.executable, '-c', RUN_AND_SAY_WHERE, *SMALL, f'ray.address={address}',
                             f'exp_name={tmp_path / "run"}'], cwd=tmp_path, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    assert 'run ended: budget of 80 env steps reached' in (tmp_path / 'run' / 'log.txt').read_text()
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_an_empty_address_starts_a_local_ray_beside_a_running_head(tmp_path, ray_head):
    where = run_and_say_where(tmp_path, '')
    assert where['gcs_address'] != ray_head.address
    assert where['cpus'] == max(os.cpu_count(), 1)  # its own CPUs, not the head's one


def test_auto_joins_the_running_head(tmp_path, ray_head):
    where = run_and_say_where(tmp_path, 'auto')
    assert where == {'gcs_address': ray_head.address, 'cpus': 1.0}


def test_ddp_learners_each_collect_on_a_ray_of_their_own_beside_a_running_head(tmp_path, ray_head):
    command = [sys.executable, '-m', 'torch.distributed.run', '--nproc_per_node=2', f'--master_port={free_port()}',
               '-m', 'tidal', 'train', 'pendulum_sac', '--max-env-step', '160', '--exp-name', 'run', '--no-progress',
               *[arg for override in SMALL for arg in ('--set', override)]]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                            env={**os.environ, 'OMP_NUM_THREADS': '1'})
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((tmp_path / 'run' / 'summary.json').read_text())
    assert summary['env_step'] == 160  # 80 per rank, each from its own Ray worker


def test_a_head_stopped_without_ray_stop_is_on_record_but_only_auto_follows_it(monkeypatch):
    import ray
    from tidal.entry.setup import load_config
    from tidal.worker.ray_cluster import RayClusterError, connect_ray

    assert not ray.is_initialized()
    folder = tempfile.mkdtemp(prefix='ray')
    monkeypatch.setenv('RAY_TMPDIR', folder)
    try:
        head = Head(folder)
        head.kill()
        assert head.record.read_text().strip() == head.address  # on record; nothing listens there
        with monkeypatch.context() as hidden, pytest.raises(RayClusterError) as refused:
            # 'auto' would join the one Ray running on the machine (the module's head, say) before the record
            hidden.setattr('ray._private.services.find_gcs_addresses', lambda: frozenset())
            connect_ray(load_config('pendulum_sac', 0, ['collector.type=ray', 'ray.address=auto']))
        assert str(refused.value) == (
            f"no Ray cluster at {head.address}, the head ray.address='auto' finds on record (Connection refused); "
            "start it with `ray start --head`, clear the record with `ray stop` or leave ray.address empty for a "
            "local Ray")
        connect_ray(load_config('pendulum_sac', 0, ['collector.type=ray', 'collector.num_workers=1']))
        assert ray.get_runtime_context().gcs_address != head.address
    finally:
        ray.shutdown()
        shutil.rmtree(folder, ignore_errors=True)
