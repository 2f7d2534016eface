"""Choosing the training loop a policy needs, for `tidal train` and `tidal resume`."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Optional

from easydict import EasyDict

from tidal.config import read_config
from tidal.entry.serial_pipeline import OffPolicyRun
from tidal.entry.setup import ConfigInput, load_config, start_run
from tidal.entry.sqil_pipeline import SQILRun
from tidal.errors import TidalError
from tidal.policies.base import Policy
from tidal.registry import POLICY_REGISTRY
from tidal.worker.checkpoint import load_checkpoint

RUNS: dict[str, type[OffPolicyRun]] = {'off_policy': OffPolicyRun, 'sqil': SQILRun}


def run_class(cfg: EasyDict) -> type[OffPolicyRun]:
    """The run class named by the policy's `pipeline` attribute."""
    name = getattr(POLICY_REGISTRY.get(cfg.policy.type), 'pipeline', 'off_policy')
    if name not in RUNS:
        raise TidalError(f"policy '{cfg.policy.type}' asks for pipeline '{name}', which tidal does not have "
                         f"(known: {', '.join(RUNS)})")
    return RUNS[name]


def train(input_cfg: ConfigInput, seed: int = 0, max_env_step: Optional[int] = None,
          max_train_iter: Optional[int] = None, overrides: Iterable[str] = (), progress: bool = True) -> Policy:
    """Train any registered policy with the loop it needs."""
    cfg = load_config(input_cfg, seed, overrides)
    return start_run(run_class(cfg), cfg, max_env_step, max_train_iter, progress)


def resume(run_dir: str | os.PathLike, progress: bool = True) -> Policy:
    """Continue a run from its folder: its saved config and its latest checkpoint."""
    run_dir = Path(run_dir)
    state = load_checkpoint(run_dir / 'ckpt' / 'latest.pt')
    main_config, create_config = read_config(str(run_dir / 'config.yaml'))
    cfg = load_config((main_config, create_config), seed=int(main_config.get('seed', 0)))
    run = run_class(cfg)(cfg, run_dir, state['max_env_step'], state['max_train_iter'], progress)
    run.restore(state)
    return run.train()
