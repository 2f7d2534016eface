"""A seed group's shares as Ray tasks on a cluster of two nodes of one CPU each (on this machine, as Ray's own tests
make one): the same results as the group on this machine, and a node removed mid-run, its seeds continued by
resume."""
from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip('ray')

from tidal.entry.group_run import GroupIncomplete  # noqa: E402
from tidal.entry.pipelines import resume, train  # noqa: E402

from group_runs import assert_same_model, final_model, returns  # noqa: E402  (tests/entry is on sys.path)

STEPS = 2048


@pytest.fixture
def two_nodes(monkeypatch):
    """A head and one more node, one CPU each; every Ray process stopped at teardown."""
    import ray
    from ray.cluster_utils import Cluster
    monkeypatch.setenv('RAY_worker_niceness', '0')
    cluster = Cluster(initialize_head=True, head_node_args={'num_cpus': 1, 'include_dashboard': False})
    worker = cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    try:
        yield cluster, worker
    finally:
        ray.shutdown()
        cluster.shutdown()


def on_ray(cluster, group_dir):
    return [f'exp_name={group_dir}', 'seed_group.on_ray=true', f'ray.address={cluster.address}',
            'seed_group.processes=2']


def test_a_group_on_two_ray_nodes_equals_the_group_on_this_machine(two_nodes, tmp_path, capsys):
    cluster, _ = two_nodes
    train('cartpole_ppo', seeds=[0, 1, 2], max_env_step=STEPS, progress=False,
          overrides=[f'exp_name={tmp_path / "here"}', 'seed_group.processes=2'])
    capsys.readouterr()
    result = train('cartpole_ppo', seeds=[0, 1, 2], max_env_step=STEPS, progress=False,
                   overrides=on_ray(cluster, tmp_path / 'ray'))
    out = capsys.readouterr().out
    assert '2 processes of 2 or 1 seeds each, stacked (seed_group.processes, on Ray; ' in out.splitlines()[0]
    assert [run.run_dir.name for run in result.runs] == ['seed_0', 'seed_1', 'seed_2']
    for seed in (0, 1, 2):
        here, there = tmp_path / 'here' / f'seed_{seed}', tmp_path / 'ray' / f'seed_{seed}'
        assert returns(there) == returns(here), seed
        assert_same_model(final_model(there), final_model(here), 1e-5)


def test_a_node_removed_mid_run_leaves_its_seeds_for_resume(two_nodes, tmp_path, capsys):
    cluster, worker = two_nodes
    group_dir = tmp_path / 'g'
    steps = 4 * STEPS

    def remove_when_training() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            rows = [group_dir / f'seed_{seed}' / 'evals.csv' for seed in (0, 1, 2)]
            if all(path.is_file() and len(path.read_text().splitlines()) >= 3 for path in rows):
                cluster.remove_node(worker)
                return
            time.sleep(0.2)
    remover = threading.Thread(target=remove_when_training)
    remover.start()
    with pytest.raises(GroupIncomplete) as info:
        train('cartpole_ppo', seeds=[0, 1, 2], max_env_step=steps, progress=False,
              overrides=on_ray(cluster, group_dir))
    remover.join()
    err = capsys.readouterr().err
    lost = [seed for seed in (0, 1, 2) if f'tidal: seed {seed} stopped: its Ray task failed' in err]
    assert lost and f'continue them with: tidal resume {group_dir}' in str(info.value)
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    resume(group_dir, progress=False)
    for seed in (0, 1, 2):
        assert len(returns(group_dir / f'seed_{seed}')) == steps // 1024 + 1, seed  # none lost, none twice
