"""The typed contracts between a policy and the workers: its modes and what they receive.

Workers (collectors, evaluators, learners, data feeds) see a policy only through these views, so any
object with the same methods (a user's own policy, a test double) drives the same loops.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Any, Callable, Iterable, Mapping, Optional, Protocol, Sequence

import torch
from easydict import EasyDict

from tidal.base.errors import ConfigError
from tidal.base.stages import PlanFn

EnvIds = Optional[Iterable[int]]  # env indices of a batch; None means all of them


@dataclass(frozen=True)
class Timestep:
    """What the envs answered to one batched action: every field has the env index as its leading dim."""

    next_obs: Any               # true successor of the acted-on obs (the final obs where an episode ended)
    reward: torch.Tensor        # float32 [N], or [N, agents] from a multi-agent env
    terminated: torch.Tensor    # bool [N]: the MDP ended; do not bootstrap
    truncated: torch.Tensor     # bool [N]: cut off (time limit); bootstrap from next_obs
    first: torch.Tensor         # bool [N]: the acted-on obs opened an episode


@dataclass(frozen=True)
class EnvLayout:
    """How collected rows map to envs: `steps` steps of `num_envs` envs, step-major.

    Env i's k-th step of a collection is row `k * num_envs + i`, so a policy that needs each env's
    time series (GAE, n-step returns) reshapes a column to [steps, num_envs, ...].
    """

    num_envs: int
    steps: int


class RunningStatistic(Protocol):
    """A statistic that acting updates (an observation normaliser): saved and loaded as tensors."""

    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: dict[str, Any]) -> None: ...
    def merge_moments(self, batch_mean: torch.Tensor, batch_var: torch.Tensor, batch_count: Any) -> None: ...


class ResetEnvs(Protocol):
    def __call__(self, env_ids: EnvIds = None) -> None: ...


class LearnMode(Protocol):
    @property
    def cfg(self) -> EasyDict: ...

    def forward(self, batch: dict[str, Any]) -> dict[str, Any]: ...  # one update; 0-d tensors to log
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: dict[str, Any]) -> None: ...
    def monitor_vars(self) -> list[str]: ...
    def reset(self) -> None: ...
    def optimizers(self) -> Sequence[torch.optim.Optimizer]: ...  # every optimizer an update steps
    @property
    def plan(self) -> Optional[PlanFn]: ...  # the update as loss stages (a seed group stacks them), or None


class CollectMode(Protocol):
    @property
    def cfg(self) -> EasyDict: ...

    def forward(self, obs: Any, **kwargs: Any) -> dict[str, torch.Tensor]: ...
    def random_action(self, obs: Any) -> dict[str, torch.Tensor]: ...
    def process_transition(self, obs: Any, policy_output: dict[str, torch.Tensor],
                           timestep: Timestep) -> dict[str, Any]: ...
    def get_train_sample(self, transitions: dict[str, Any], layout: EnvLayout) -> dict[str, Any]: ...
    def reset(self, env_ids: EnvIds = None) -> None: ...
    def state_dict(self) -> dict[str, Any]: ...  # per-env acting state, for an exact resume
    def load_state_dict(self, state: dict[str, Any]) -> None: ...
    # what acting needs, for a copy of the collect mode in another process (a Ray worker)
    def weights(self) -> dict[str, Any]: ...
    def load_weights(self, state: dict[str, Any]) -> None: ...
    def running_statistics(self) -> Mapping[str, RunningStatistic]: ...


class EvalMode(Protocol):
    @property
    def cfg(self) -> EasyDict: ...

    def forward(self, obs: Any) -> dict[str, torch.Tensor]: ...
    def reset(self, env_ids: EnvIds = None) -> None: ...
    def seed(self, seed: int) -> None: ...  # reseeds the eval mode's own generator (not torch's global one)


def _rollout_as_collected(rollout: dict[str, Any], layout: EnvLayout) -> None:
    pass


@dataclass(frozen=True)
class LearnView:
    """A policy's learn mode: bound methods, so `dataclasses.replace` can swap one of them."""

    forward: Callable[[dict[str, Any]], dict[str, Any]]
    state_dict: Callable[[], dict[str, Any]]
    load_state_dict: Callable[[dict[str, Any]], None]
    monitor_vars: Callable[[], list[str]]
    reset: Callable[[], None]
    optimizers: Callable[[], Sequence[torch.optim.Optimizer]]
    cfg: EasyDict
    plan: Optional[PlanFn] = None  # the update as loss stages, which a seed group stacks; None: it cannot
    # an on-policy feed hands it each rollout (step-major, `EnvLayout`) before its epochs, with the weights that
    # all earlier updates made, to set columns again in place (PPO's V-trace targets); none by default
    prepare_rollout: Callable[[dict[str, Any], EnvLayout], None] = _rollout_as_collected


@dataclass(frozen=True)
class ActingSteps:
    """A collect or eval forward in the three steps a seed group batches over its seeds.

    `prepare(obs)` gives the network input (it may update the seed's own running statistics), `draw(input,
    generator)` every random number the step uses, in the order a plain forward draws them (None: no draws),
    and `act(model, input, noise)` the policy output from those alone. `act` reads nothing of the policy but
    `model` and its config and uses only trailing dimensions, so the group runs it once on a twin of `model`
    whose weights are the seeds' stacked ones, on inputs [S, N, ...]. The plain forward is
    `act(model, x, draw(x, generator))` with `x = prepare(obs)`.
    """

    prepare: Callable[[Any], Any]
    draw: Callable[[Any, Optional[torch.Generator]], Any]
    act: Callable[[Any, Any, Any], dict[str, torch.Tensor]]
    model: torch.nn.Module
    generator: Optional[torch.Generator] = None  # what a plain forward draws from (None: torch's global one)

    def forward(self, obs: Any) -> dict[str, torch.Tensor]:
        """The plain forward of one seed."""
        inputs = self.prepare(obs)
        return self.act(self.model, inputs, self.draw(inputs, self.generator))


def no_draw(inputs: Any, generator: Optional[torch.Generator]) -> None:
    """`ActingSteps.draw` of a forward that draws nothing (a greedy action)."""
    return None


def as_given(obs: Any) -> Any:
    """`ActingSteps.prepare` of a network that reads the observation as it comes."""
    return obs


@dataclass(frozen=True)
class CollectView:
    forward: Callable[..., dict[str, torch.Tensor]]
    random_action: Callable[[Any], dict[str, torch.Tensor]]
    process_transition: Callable[[Any, dict[str, torch.Tensor], Timestep], dict[str, Any]]
    get_train_sample: Callable[[dict[str, Any], EnvLayout], dict[str, Any]]
    reset: ResetEnvs
    state_dict: Callable[[], dict[str, Any]]
    load_state_dict: Callable[[dict[str, Any]], None]
    weights: Callable[[], dict[str, Any]]
    load_weights: Callable[[dict[str, Any]], None]
    running_statistics: Callable[[], Mapping[str, RunningStatistic]]
    cfg: EasyDict
    steps: Optional[ActingSteps] = None  # `forward` in steps a seed group batches; None: it acts per seed


@dataclass(frozen=True)
class EvalView:
    forward: Callable[[Any], dict[str, torch.Tensor]]
    reset: ResetEnvs
    seed: Callable[[int], None]
    cfg: EasyDict
    steps: Optional[ActingSteps] = None  # `forward` in steps a seed group batches; None: it acts per seed


class TrajectoryStore(Protocol):
    """Read access to per-env time-ordered replay (a `TrajectoryBuffer`), for a policy that builds its batches
    from stored trajectories (MuZero's unroll targets, reanalyze)."""

    @property
    def device(self) -> torch.device: ...
    @property
    def num_envs(self) -> int: ...
    @property
    def columns(self) -> AbstractSet[str]: ...
    def get(self, env_ids: torch.Tensor, positions: torch.Tensor, keys: Sequence[str]) -> dict[str, Any]: ...
    def steps_to_episode_end(self, env_ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor: ...
    def current_position(self) -> torch.Tensor: ...


@dataclass(frozen=True)
class UnrollView:
    """The mode the unroll feed needs besides learning: sampled (env, position) starts of a trajectory store
    turned into one training batch (targets, reanalyze)."""

    make_batch: Callable[[TrajectoryStore, torch.Tensor, torch.Tensor], dict[str, Any]]


#: The model updates a feed makes after the held policy's learn update number n (from 1): their infos, maybe none.
ModelUpdates = Callable[[int], list[dict[str, torch.Tensor]]]


@dataclass(frozen=True)
class ReprView:
    """What the 'repr' feed needs of a policy that learns a representation model of its own beside the policy
    it holds (muzero_repr): the feed keeps the model's replay and its schedule, the policy the model.

    By default the feed makes the model updates after each training iteration of the held feed (ALF's
    schedule), and the next learn update reports their losses; with `repr.training.interval_unit='learn_update'`
    they run inside the held policy's learn updates instead: the feed hands its `ModelUpdates` to `schedule`.
    """

    replay_seed: int                                    # seeds the model replay's sampling
    collected: Callable[[], list[dict[str, Any]]]       # the raw steps collected since the last call, in order
    make_batch: Callable[[TrajectoryStore, torch.Tensor, torch.Tensor], dict[str, Any]]  # starts -> model batch
    train: Callable[[dict[str, Any], Optional[torch.Tensor]], dict[str, torch.Tensor]]  # (batch, IS weight)
    schedule: Callable[[ModelUpdates], None]


@dataclass(frozen=True)
class PolicyViews:
    """Everything of a policy that a data feed sees: its device, its modes and the extra views it offers by
    name (PPG's 'aux' learn mode, MuZero's 'unroll'); never the Policy object itself."""

    device: torch.device
    learn: LearnView
    collect: CollectView
    extra: Mapping[str, Any]
    policy_type: str = ''

    def view(self, name: str, feed: str) -> Any:
        """The extra view `name`, which the feed `feed` needs; a policy without it is a config error."""
        if name not in self.extra:
            raise ConfigError(f"policy '{self.policy_type}' offers no '{name}' view, which the '{feed}' feed needs "
                              f"(its Policy.extra_views() gives {sorted(self.extra) or 'none'})")
        return self.extra[name]
