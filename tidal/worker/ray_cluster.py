"""The Ray a run's actors live on: started or joined as `ray.address` says, with the user's modules shipped to it.

`ray.address=''` starts a Ray of the run's own (Ray's `address='local'`) whatever this machine has on record:
a plain `ray.init()` would join the cluster that `ray start` last recorded in Ray's temp folder, running or
stopped without `ray stop`, and fail on the CPU count tidal gives a local Ray. 'auto' joins the cluster Ray
finds for it: RAY_ADDRESS's, else the Ray running on this machine (the recorded one where several run), else
the recorded one; 'host:port' joins the head there. The head is probed first, so that one that is gone fails
in one line instead of Ray retrying for minutes.
"""
from __future__ import annotations

import importlib.util
import os
import site
import socket
import sysconfig
from pathlib import Path
from typing import Any, Optional

from easydict import EasyDict

from tidal.base.errors import TidalError, last_line
from tidal.config.compiler import IMPORT_PATHS
from tidal.config.tree import value_at
from tidal.registry import module_name

PROBE_TIMEOUT_S = 5.0  # for a TCP connection to a cluster's head before Ray is asked to join it
IMPORT_KEYS = (*IMPORT_PATHS, ('policy', 'model', 'import_names'))  # the modules a run's config imports


class RayClusterError(TidalError):
    """Ray could not be started or joined."""


def connect_ray(cfg: EasyDict) -> None:
    """Start a local Ray (ray.address '') or join a cluster ('auto', 'host:port'), unless one is running, with
    `runtime_env(cfg)` as the job's: every worker of the run, on any node, imports the user's modules."""
    import ray
    if ray.is_initialized():
        return
    options: dict[str, Any] = dict(include_dashboard=False, log_to_driver=True, configure_logging=False,
                                   runtime_env=runtime_env(cfg))
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
        raise RayClusterError(f'cannot start or join {where}: {last_line(err)}') from None


def ray_actors(cfg: EasyDict) -> int:
    """Ray actors of one CPU each a run starts: its rollout workers and its eval actor."""
    workers = cfg.collector.num_workers if cfg.collector.type == 'ray' else 0
    return workers + int(cfg.policy.eval.evaluator.on_ray)


def runtime_env(cfg: EasyDict) -> Optional[dict[str, list[str]]]:
    """The run's Ray `runtime_env`: as `py_modules`, each module the config imports that is not installed
    (a package's folder whole, a module's file), or None where there is none.

    `py_modules` because it is the one field that reaches a node lacking the files: Ray zips each module into
    the cluster's store and unpacks it onto the import path of every node before a worker starts there (once
    per node and content). A PYTHONPATH in `env_vars` only names a folder each node must already have; a
    `working_dir` would upload the whole folder (a config's often holds run folders and checkpoints), move the
    workers' working folder, and there is one. tidal and what is installed (site-packages, the standard
    library) are not shipped: they must be installed on every node."""
    modules = sorted({str(path) for path in map(_source, _import_entries(cfg)) if path is not None})
    return {'py_modules': modules} if modules else None


def by_module_names(cfg: EasyDict) -> None:
    """Name each of `cfg`'s imports by its module, in place, for a Ray worker: a file path (`./my_policy.py`)
    names nothing on another node or from another working folder, while its module is on the import path
    (shipped by `runtime_env`, or in the driver's import path the worker takes up)."""
    for keys in IMPORT_KEYS:
        section = value_at(cfg, keys[:-1])
        if isinstance(section, dict) and section.get(keys[-1]):
            section[keys[-1]] = [module_name(entry) for entry in section[keys[-1]]]


def _import_entries(cfg: EasyDict) -> list[str]:
    """Every module name and file path that `cfg` imports (`import_names`, and the env's, policy's, model's)."""
    return [entry for keys in IMPORT_KEYS for entry in value_at(cfg, keys) or []]


def _source(entry: str) -> Optional[Path]:
    """The file or package folder that `entry`'s top-level module was imported from, unless it is tidal,
    installed, or not Python source (built in, compiled)."""
    top = module_name(entry).partition('.')[0]
    try:
        spec = None if top == 'tidal' else importlib.util.find_spec(top)
    except (ImportError, ValueError):  # (ValueError: a module in sys.modules without a spec)
        spec = None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        path = Path(next(iter(spec.submodule_search_locations))).resolve()
    elif spec.origin and spec.origin.endswith('.py'):
        path = Path(spec.origin).resolve()
    else:
        return None
    return None if any(path.is_relative_to(root) for root in _installed_roots()) else path


def _installed_roots() -> list[Path]:
    """The folders of installed modules and of the standard library."""
    folders = {sysconfig.get_path(name) for name in ('stdlib', 'platstdlib', 'purelib', 'platlib')}
    folders.update(site.getsitepackages() + [site.getusersitepackages()])
    return [Path(folder).resolve() for folder in folders if folder]


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
