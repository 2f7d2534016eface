"""The Ray a run's actors live on, started or joined as `ray.address` says.

`ray.address=''` starts a Ray of the run's own (Ray's `address='local'`) whatever this machine has on record:
a plain `ray.init()` would join the cluster that `ray start` last recorded in Ray's temp folder, running or
stopped without `ray stop`, and fail on the CPU count tidal gives a local Ray. 'auto' joins the cluster Ray
finds for it: RAY_ADDRESS's, else the Ray running on this machine (the recorded one where several run), else
the recorded one; 'host:port' joins the head there. The head is probed first, so that one that is gone fails
in one line instead of Ray retrying for minutes.
"""
from __future__ import annotations

import os
import socket
from typing import Any

from easydict import EasyDict

from tidal.base.errors import TidalError

PROBE_TIMEOUT_S = 5.0  # for a TCP connection to a cluster's head before Ray is asked to join it


class RayClusterError(TidalError):
    """Ray could not be started or joined."""


def connect_ray(cfg: EasyDict) -> None:
    """Start a local Ray (ray.address '') or join a cluster ('auto', 'host:port'), unless one is running."""
    import ray
    if ray.is_initialized():
        return
    options: dict[str, Any] = dict(include_dashboard=False, log_to_driver=True, configure_logging=False)
    if cfg.ray.address:
        address = cfg.ray.address
        _check_head(address)
    else:
        address = 'local'
        # one CPU per actor: never fewer logical CPUs than actors, or a local run would wait forever
        options['num_cpus'] = cfg.ray.num_cpus or max(os.cpu_count() or 1, ray_actors(cfg))
        # Ray lowers its workers' priority by default; rollout workers are the run's own work, not background
        os.environ.setdefault('RAY_worker_niceness', '0')
    try:
        ray.init(address=address, **options)
    except (ConnectionError, RuntimeError, ValueError) as err:
        where = f"the Ray cluster at ray.address='{cfg.ray.address}'" if cfg.ray.address else 'a local Ray'
        raise RayClusterError(f'cannot start or join {where}: {one_line(err)}') from None


def ray_actors(cfg: EasyDict) -> int:
    """Ray actors of one CPU each a run starts: its rollout workers and its eval actor."""
    workers = cfg.collector.num_workers if cfg.collector.type == 'ray' else 0
    return workers + int(cfg.policy.eval.evaluator.on_ray)


def _check_head(address: str) -> None:
    """Fail in one line unless a head answers where `address` points ('auto': the cluster on record or
    `RAY_ADDRESS`'s). ray.init still gets `address` itself: only 'auto' lets it take up the token of a head that
    `ray start` started with token authentication (Ray's default)."""
    if address != 'auto':
        _check_listening(address, f"ray.address='{address}'", 'start one with `ray start --head`')
        return
    from ray._private.services import canonicalize_bootstrap_address  # how ray.init reads 'auto'
    try:
        head = canonicalize_bootstrap_address('auto')
    except ConnectionError:
        raise RayClusterError("ray.address='auto' finds no Ray cluster on this machine; start one with "
                              "`ray start --head` or leave ray.address empty for a local Ray") from None
    if head is None:  # RAY_ADDRESS=local
        return
    if os.environ.get('RAY_ADDRESS'):
        _check_listening(head, f"{head}, RAY_ADDRESS's, which ray.address='auto' follows",
                         'start it with `ray start --head`, unset RAY_ADDRESS')
    else:
        _check_listening(head, f"{head}, the head ray.address='auto' finds on record",
                         'start it with `ray start --head`, clear the record with `ray stop`')


def _check_listening(address: str, what: str, remedy: str) -> None:
    """Fail in one line when nothing listens at `address` (`what`, for the message): ray.init would retry
    there for minutes."""
    host, _, port = address.split('://')[-1].rpartition(':')
    if not host or not port.isdigit():
        raise RayClusterError(f"ray.address='{address}' is not 'auto' or 'host:port'")
    try:
        socket.create_connection((host, int(port)), timeout=PROBE_TIMEOUT_S).close()
    except OSError as err:
        raise RayClusterError(f'no Ray cluster at {what} ({err.strerror or err}); {remedy} '
                              f'or leave ray.address empty for a local Ray') from None


def one_line(err: BaseException) -> str:
    """The last line of `err`'s message: Ray's end with the cause, after their tracebacks."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[-1] if lines else type(err).__name__
