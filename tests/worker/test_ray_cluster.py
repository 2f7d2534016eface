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


@pytest.fixture
def own_ray():
    """This process's Ray, as the test's run starts it; shut down at teardown."""
    import ray
    assert not ray.is_initialized()
    try:
        yield ray
    finally:
        ray.shutdown()


def test_an_empty_address_starts_a_ray_of_its_own_beside_a_running_head(ray_head, own_ray):
    from tidal.entry.setup import load_config
    from tidal.worker.ray_cluster import connect_ray

    connect_ray(load_config('pendulum_sac', 0, SMALL))
    assert own_ray.get_runtime_context().gcs_address != ray_head.address
    assert own_ray.cluster_resources()['CPU'] == max(os.cpu_count(), 1)  # its own CPUs, not the head's one


def test_auto_joins_the_running_head_and_runs_there(tmp_path, ray_head, own_ray):
    from tidal import serial_pipeline

    serial_pipeline('pendulum_sac', seed=0, max_env_step=80, progress=False,
                    overrides=[*SMALL, 'ray.address=auto', f'exp_name={tmp_path / "run"}'])
    assert own_ray.get_runtime_context().gcs_address == ray_head.address
    assert own_ray.cluster_resources()['CPU'] == 1
    assert 'run ended: budget of 80 env steps reached' in (tmp_path / 'run' / 'log.txt').read_text()


def test_ddp_learners_on_two_nodes_each_collect_on_a_ray_of_their_own(tmp_path, ray_head):
    """Two torchrun launchers as two nodes (`--nnodes 2`), each in a folder of its own, beside a head on record:
    each rank starts its own Ray, the ranks learn together, and the run folder is on node 0 alone."""
    nodes, port = [tmp_path / 'node0', tmp_path / 'node1'], free_port()
    launchers = []
    for rank, node in enumerate(nodes):
        node.mkdir()
        launchers.append(subprocess.Popen(
            [sys.executable, '-m', 'torch.distributed.run', '--nnodes=2', '--nproc_per_node=1', f'--node_rank={rank}',
             '--master_addr=127.0.0.1', f'--master_port={port}', '-m', 'tidal', 'train', 'pendulum_sac',
             '--max-env-step', '160', '--exp-name', 'run', '--no-progress',
             *[arg for override in SMALL for arg in ('--set', override)]],
            cwd=node, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, 'OMP_NUM_THREADS': '1'}))
    try:
        outputs = [launcher.communicate(timeout=300)[0] for launcher in launchers]
    finally:
        for launcher in launchers:
            launcher.kill()
    assert [launcher.returncode for launcher in launchers] == [0, 0], outputs[0][-3000:] + outputs[1][-3000:]
    summary = json.loads((nodes[0] / 'run' / 'summary.json').read_text())
    assert summary['env_step'] == 160  # 80 per rank, each from its own Ray worker
    assert [path.name for path in nodes[1].iterdir()] == []


def test_a_head_stopped_without_ray_stop_is_on_record_but_only_auto_follows_it(monkeypatch, own_ray):
    from tidal.entry.setup import load_config
    from tidal.worker.ray_cluster import RayClusterError, connect_ray

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
        connect_ray(load_config('pendulum_sac', 0, SMALL))
        assert own_ray.get_runtime_context().gcs_address != head.address
    finally:
        own_ray.shutdown()
        shutil.rmtree(folder, ignore_errors=True)


USER_POLICY = '''
"""A user's own policy in a file that is not installed: SAC under another name."""
from tidal import POLICY_REGISTRY
from tidal.policies.sac import SACPolicy


@POLICY_REGISTRY.register('shipped_sac')
class ShippedSAC(SACPolicy):
    pass
'''
USER_CONFIG = '''
main_config = dict(exp_name='run', env=dict(env_id='Pendulum-v1', collector_env_num=1, evaluator_env_num=1,
                                            n_evaluator_episode=1, stop_value=None,
                                            env_kwargs=dict(max_episode_steps=20)),
                   policy=dict(random_collect_size=40, model=dict(actor_hidden_sizes=[16], critic_hidden_sizes=[16]),
                               learn=dict(batch_size=16), collect=dict(n_sample=20)))
create_config = dict(env=dict(type='gym'), policy=dict(type='shipped_sac', import_names=['shipped_sac_policy']))
'''


def test_a_users_policy_file_reaches_workers_that_cannot_see_it(tmp_path, monkeypatch, own_ray):
    """The policy file lies beside its config, which puts the folder on this process's import path; once Ray
    is up the folder is moved away, as if the workers were on a node without it: they import the module Ray
    got from tidal's runtime_env."""
    from tidal import serial_pipeline
    from tidal.worker import ray_pool

    user, elsewhere = tmp_path / 'user', tmp_path / 'elsewhere'
    user.mkdir()
    elsewhere.mkdir()
    (user / 'shipped_sac_policy.py').write_text(USER_POLICY)
    (user / 'run.py').write_text(USER_CONFIG)
    monkeypatch.chdir(elsewhere)
    monkeypatch.setattr(sys, 'path', list(sys.path))
    connect_ray = ray_pool.connect_ray

    def connect_then_move_the_folder_away(*args):
        connect_ray(*args)
        user.rename(tmp_path / 'gone')

    monkeypatch.setattr(ray_pool, 'connect_ray', connect_then_move_the_folder_away)
    try:
        result = serial_pipeline(str(user / 'run.py'), seed=0, max_env_step=80, progress=False,
                                 overrides=['collector.type=ray', 'collector.num_workers=1'])
    finally:
        sys.modules.pop('shipped_sac_policy', None)
    assert type(result.policy).__name__ == 'ShippedSAC' and not user.exists()
    assert 'run ended: budget of 80 env steps reached' in (result.run_dir / 'log.txt').read_text()


def test_the_runtime_env_ships_the_users_modules_and_nothing_installed(tmp_path, monkeypatch):
    from easydict import EasyDict
    from tidal.registry import import_names
    from tidal.worker.ray_cluster import runtime_env

    monkeypatch.setattr(sys, 'path', [str(tmp_path), *sys.path])
    (tmp_path / 'shipped_env_module.py').write_text('')
    (tmp_path / 'shipped_package').mkdir()
    (tmp_path / 'shipped_package' / '__init__.py').write_text('')
    (tmp_path / 'shipped_package' / 'policy.py').write_text('')
    (tmp_path / 'by_path').mkdir()
    (tmp_path / 'by_path' / 'shipped_by_path.py').write_text('')
    by_path = str(tmp_path / 'by_path' / 'shipped_by_path.py')
    cfg = EasyDict(import_names=['shipped_package.policy', by_path], env={'import_names': ['shipped_env_module']},
                   policy={'import_names': ['gymnasium.spaces', 'json'],
                           'model': {'import_names': ['tidal.models.conv_qac']}})
    try:
        import_names(['shipped_package.policy', by_path, 'shipped_env_module'])  # as the run's driver does
        assert runtime_env(cfg) == {'py_modules': sorted([
            by_path, str(tmp_path / 'shipped_env_module.py'), str(tmp_path / 'shipped_package')])}
        assert runtime_env(EasyDict(import_names=['json'], policy={'import_names': []})) is None
    finally:
        for name in ('shipped_package', 'shipped_package.policy', 'shipped_by_path', 'shipped_env_module'):
            sys.modules.pop(name, None)


def test_a_worker_imports_a_file_entry_by_its_module_name(tmp_path, monkeypatch):
    """On another node (or from another working folder) the path names nothing; the module Ray shipped does."""
    import torch
    from tidal.config.tree import to_plain
    from tidal.entry.setup import load_config
    from tidal.worker.ray_worker import prepare_worker_process

    (tmp_path / 'user').mkdir()
    (tmp_path / 'user' / 'shipped_by_path.py').write_text('')
    entry = str(tmp_path / 'user' / 'shipped_by_path.py')
    monkeypatch.setattr(sys, 'path', list(sys.path))
    threads = torch.get_num_threads()
    try:
        cfg = to_plain(load_config('pendulum_sac', 0, [f'policy.import_names=[{entry}]',
                                                       f'policy.model.import_names=[{entry}]']))
        (tmp_path / 'user').rename(tmp_path / 'gone')
        run_cfg = prepare_worker_process(cfg, [])
    finally:
        torch.set_num_threads(threads)
        sys.modules.pop('shipped_by_path', None)
    assert run_cfg.policy.import_names == run_cfg.policy.model.import_names == ['shipped_by_path']
