"""What a training entry point gives back: the trained Policy, its run folder and the eval history.

Callers that used the result as the Policy itself (`policy.eval_mode`, `policy.model`) keep working:
attributes the result does not have come from the policy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from tidal.policies.base import Policy
from tidal.worker.plot import read_evals

#: evals.csv columns that count, read back as ints; the others are floats.
_COUNT_COLUMNS = ('env_step', 'train_iter')


@dataclass(frozen=True)
class RunResult:
    """The outcome of `serial_pipeline` and its siblings (and of `resume`).

    `evals` holds the rows of `<run_dir>/evals.csv` as numbers, oldest first, e.g.
    `{'env_step': 5000, 'train_iter': 4000, 'return_mean': -160.2, ...}`.
    """

    policy: Policy
    run_dir: Path
    evals: list[dict[str, float]] = field(default_factory=list)

    @classmethod
    def of_run(cls, policy: Policy, run_dir: Path) -> RunResult:
        return cls(policy, Path(run_dir), read_eval_rows(Path(run_dir)))

    def __getattr__(self, name: str) -> Any:
        """The policy's attribute: the result stands in for the Policy that entry points used to return."""
        if name == 'policy':  # not set yet (copying, unpickling): no policy to ask
            raise AttributeError(name)
        return getattr(self.policy, name)


@dataclass(frozen=True)
class GroupResult:
    """The outcome of a seed group (`seeds=[...]`): the group folder (its `aggregate/` holds the IQM curve and
    summary.json) and every seed's RunResult, in seed order, read from the seed's folder when first asked for
    (the seeds trained in other processes; the command line never asks)."""

    group_dir: Path
    run_dirs: tuple[Path, ...]

    @cached_property
    def runs(self) -> list[RunResult]:
        return [RunResult(latest_policy(run_dir), run_dir, read_eval_rows(run_dir)) for run_dir in self.run_dirs]

    @property
    def policies(self) -> list[Policy]:
        return [run.policy for run in self.runs]


def latest_policy(run_dir: Path) -> Any:
    """The policy of a run folder, its latest weights loaded."""
    from tidal.config import read_config
    from tidal.entry.setup import load_config
    from tidal.worker.builders import build_policy
    from tidal.worker.checkpoint import load_checkpoint, load_policy_weights, policy_state
    policy = build_policy(load_config(read_config(str(run_dir / 'config.yaml'))))
    latest = run_dir / 'ckpt' / 'latest.pt'
    if latest.is_file():
        load_policy_weights(policy, policy_state(load_checkpoint(latest), latest), latest)
    return policy


def read_eval_rows(run_dir: Path) -> list[dict[str, float]]:
    """The rows of a run's evals.csv; none where the run made no evaluation (so wrote no file)."""
    if not (run_dir / 'evals.csv').is_file():
        return []
    columns = read_evals(run_dir)
    return [{key: int(value) if key in _COUNT_COLUMNS else value for key, value in zip(columns, row)}
            for row in zip(*columns.values())]
