"""A seed group's shares as Ray tasks (`seed_group.on_ray`): each share a task of one CPU (one GPU on cuda), placed
by Ray on any node of the cluster `ray.address` names.

A task builds its seeds from their folders and trains them where it runs, so the group folder must be on storage
every node shares (a network file system); a task that cannot see it fails in one line saying so. Progress and
the request to stop go through a small actor on the driver's node: each task reports its seeds' env steps to it
after a round (at most every REPORT_EVERY_S) and reads from it whether the driver asked every share to stop. A
task whose node goes away fails as a process killed would: its seeds are named, the others finish, and
`tidal resume` continues them (on the cluster, or on one machine with `seed_group.on_ray=false`).
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from easydict import EasyDict

from tidal.base.device import policy_device
from tidal.base.errors import TidalError, last_line
from tidal.entry.group_shares import ShareExit
from tidal.worker.ray_cluster import connect_ray

REPORT_EVERY_S = 0.5


class RayRunner:
    """Each share a Ray task; the cluster's CPUs (its GPUs on cuda) decide how many shares by default."""

    def __init__(self, cfg: EasyDict) -> None:
        self.cfg = cfg
        self.gpu = policy_device(cfg.policy).type == 'cuda'
        self.tasks: list[Any] = []
        self.shares: list[list[int]] = []
        self.control: Any = None
        self.stop_asked = False

    def processes(self, cfg: EasyDict, seeds: int) -> tuple[int, str]:
        import ray
        connect_ray(cfg)
        chosen = int(cfg.seed_group.processes or 0)
        if chosen:
            return min(chosen, seeds), 'seed_group.processes, on Ray'
        resource = 'GPU' if self.gpu else 'CPU'
        count = int(ray.cluster_resources().get(resource, 0))
        if count < 1:
            raise TidalError(f"seed_group.on_ray: the Ray cluster has no {resource} for the group's tasks")
        return min(count, seeds), f"one per {resource} of the Ray cluster"

    def start(self, group_dir: os.PathLike, shares: Sequence[Sequence[int]]) -> None:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        connect_ray(self.cfg)
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        self.control = ray.remote(num_cpus=0)(GroupControl).options(scheduling_strategy=here).remote(len(shares))
        gpus, cpus = (1, 0) if self.gpu else (0, 1)
        task = ray.remote(num_cpus=cpus, num_gpus=gpus, max_retries=0)(train_share)
        self.shares = [list(share) for share in shares]
        self.tasks = [task.remote(os.path.abspath(group_dir), share, index, self.control)
                      for index, share in enumerate(self.shares)]

    def wait(self, on_steps: Callable[[dict[int, int]], None],
             on_line: Callable[[str, bool], None]) -> list[ShareExit]:
        import ray
        pending = list(self.tasks)
        while pending:
            if self.stop_asked:
                self.control.stop.remote()
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=REPORT_EVERY_S)
            for steps in ray.get(self.control.take.remote()):
                on_steps(steps)
        lives = ray.get(self.control.lives.remote())
        return [self._exit(task, share, live) for task, share, live in zip(self.tasks, self.shares, lives)]

    def _exit(self, task: Any, share: list[int], live: Optional[list[int]]) -> ShareExit:
        import ray
        try:
            outcome = ray.get(task)
        except ray.exceptions.RayError as err:
            return ShareExit(share, share if live is None else live, died=f'its Ray task failed: {last_line(err)}')
        if isinstance(outcome, str):
            return ShareExit(share, error=outcome)
        return ShareExit(share, signum=outcome or None)

    def stop_all(self) -> None:
        self.stop_asked = True  # the wait loop tells the tasks: no Ray call from a signal handler

    def close(self) -> None:
        import ray
        for task in self.tasks:
            try:
                ray.cancel(task, force=True)
            except (ray.exceptions.RayError, ValueError, TypeError):
                pass
        if self.control is not None:
            ray.kill(self.control)


class GroupControl:
    """The driver's side of the tasks: their latest env steps, which seeds each still trains, the stop request."""

    def __init__(self, shares: int) -> None:
        self.reports: list[dict[int, int]] = []
        self.live: list[Optional[list[int]]] = [None] * shares
        self.stopping = False

    def report(self, index: int, steps: dict[int, int], live: list[int]) -> bool:
        """A share's progress; answers whether it should stop."""
        self.reports.append(steps)
        self.live[index] = live
        return self.stopping

    def take(self) -> list[dict[int, int]]:
        reports, self.reports = self.reports, []
        return reports

    def lives(self) -> list[Optional[list[int]]]:
        return self.live

    def stop(self) -> None:
        self.stopping = True


def train_share(group_dir: str, seeds: list[int], index: int, control: Any) -> Any:
    """A Ray task: train one share where Ray placed it. Returns 0 (ended), a signal number (stopped, its seeds
    checkpointed) or an error message (its seeds could not be built)."""
    import ray
    from tidal.entry.seed_turns import share_from_folders, train_reporting
    if not (Path(group_dir) / 'group.json').is_file():
        return (f"the group folder '{group_dir}' is not on node {ray.util.get_node_ip_address()}: a group on Ray "
                f"needs its folder on storage every node shares")
    try:
        group = share_from_folders(Path(group_dir), seeds)
    except TidalError as err:
        return str(err)
    last = [-float('inf')]

    def on_round(steps: dict[int, int], final: bool = False) -> None:
        if final or time.monotonic() - last[0] >= REPORT_EVERY_S:
            last[0] = time.monotonic()
            live = [] if final else group.live_seeds()
            if ray.get(control.report.remote(index, steps, live)) and not final:
                group.request_stop(signal.SIGTERM)
    return train_reporting(group, on_round) or 0
