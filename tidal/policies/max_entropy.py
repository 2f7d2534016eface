"""What every maximum-entropy actor-critic shares: SAC with its variants, and TAAC.

Their config keys are declared once here, so the keys, their defaults and their comments cannot drift apart
between the algorithms; each policy class lists this class before `Policy` and `class_defaults` merges it in.

Reward normalisation (`normalize.reward`) divides rewards by the running std of the discounted return, as
PPO's key of the same name does, but on replayed data. The replay keeps the rewards as the env gave them; the
statistics follow collection, one env step at a time (each env's return needs its steps in order), and every
update scales its sampled rewards by the statistics of that moment. Scaled when sampled, all rewards of a batch
share one scale, whatever the age of the transition, so the critics' targets never mix an old scale with a new
one, and the replay stays the env's data (a demonstration file or a resumed run reads the same rewards).
Scaling at collection, as a rollout policy can, would freeze each reward under the statistics of its own step:
the first ones, under a variance of 1 and a few samples, would stay out of scale for as long as they are
replayed. ALF's reward normaliser, also a transform of replayed experience, is the nearest reference.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Optional

import torch
import torch.nn as nn

from tidal.base.defaults import FreeDict
from tidal.base.device import policy_device
from tidal.base.errors import ConfigError
from tidal.base.modes import Timestep
from tidal.policies.base import MODES, Policy
from tidal.rl_utils.normalizer import RewardScaler

# the form `policy.learn.target_entropy` takes for a target per action dimension: '-1.61*dim'
PER_DIM = re.compile(r'(-?[0-9]*\.?[0-9]+)\*dim')


class MaxEntropyActorCritic(Policy):
    """Soft Q critics with Polyak-averaged targets, a stochastic actor and an entropy temperature."""

    config: dict = dict(
        # (int >= 0) Env steps of uniform random actions before the first update; at most
        # other.replay_buffer.replay_buffer_size.
        random_collect_size=10000,
        normalize=dict(
            # (bool) Divide rewards by the running std of the discounted return (VecNormalize's reward scaling),
            # as replayed: the replay keeps raw rewards, each update scales its batch by the statistics of now.
            reward=False,
            # (float > 0) Scaled rewards are clipped to [-clip, clip].
            clip=10.0,
        ),
        model=FreeDict(
            # (bool) Two Q critics and the minimum of their values (clipped double Q).
            twin_critic=True,
        ),
        learn=dict(
            # (float > 0) Adam learning rate of the Q critics.
            learning_rate_q=3e-4,
            # (float > 0) Adam learning rate of the actor.
            learning_rate_policy=3e-4,
            # (float > 0) Adam learning rate of the temperatures (auto_alpha only).
            learning_rate_alpha=3e-4,
            # (float in (0, 1]) Polyak factor of the target networks: target += target_theta * (online - target).
            target_theta=0.005,
            # (float in [0, 1]) Discount factor gamma.
            discount_factor=0.99,
            # (float >= 0) Entropy temperature alpha of the actions; its initial value when auto_alpha is on
            # (then > 0: it is tuned from log(alpha)).
            alpha=0.2,
            # (bool) Tune the temperatures towards their target entropies (SAC v2) instead of keeping them fixed.
            auto_alpha=True,
            # (float or str matching '-?[0-9]*\.?[0-9]+\*dim' or None) Target entropy of the actions for auto_alpha;
            # None means -action_dim, the paper's heuristic; 'c*dim' is c per action dimension (continuous actions):
            # '-1.61*dim' is ALF's default, ln 0.2 per dimension, the entropy of a uniform over a tenth of [-1, 1].
            target_entropy=None,
            # (float >= 0) Half-width of the uniform init of the actor's output layer (0: keep default init).
            init_w=3e-3,
        ),
    )

    def __init__(self, cfg: dict, model: Optional[nn.Module] = None, enable_field: Iterable[str] = MODES) -> None:
        normalize = cfg.get('normalize') or {}
        self._reward_scaler: Optional[RewardScaler] = None
        if normalize.get('reward', False):
            self._reward_scaler = RewardScaler(cfg['learn']['discount_factor'], normalize['clip'], policy_device(cfg))
            self.parts.statistics('reward_rms', self._reward_scaler.return_rms)
        super().__init__(cfg, model, enable_field)

    def _configured_target_entropy(self, action_dim: int, default: float) -> float:
        """policy.learn.target_entropy for `action_dim` continuous actions: a number as given, 'c*dim' as
        c * action_dim, None as `default`."""
        configured = self._cfg.learn.target_entropy
        if configured is None:
            return default
        if isinstance(configured, str):
            per_dim = PER_DIM.fullmatch(configured)
            if per_dim is None:
                raise ConfigError(f"policy.learn.target_entropy must be a number, 'c*dim' or None, "
                                  f"got {configured!r}")
            return float(per_dim.group(1)) * action_dim
        return float(configured)

    # ----- reward normalisation --------------------------------------------------------------
    def _normalize_reward(self, batch: dict[str, Any]) -> None:
        """Scale the batch's replayed rewards by the return statistics of now (normalize.reward)."""
        if self._reward_scaler is not None:
            for key in ('reward', 'nstep_reward'):  # an n-step window's rewards (policy.nstep) by the same scale
                if key in batch:
                    batch[key] = self._reward_scaler.normalize(batch[key])

    def _process_transition(self, obs: Any, policy_output: dict[str, torch.Tensor],
                            timestep: Timestep) -> dict[str, Any]:
        """The transition with its raw reward; the reward extends each env's return and its statistics."""
        if self._reward_scaler is not None:
            self._reward_scaler.update(timestep.reward, timestep.terminated | timestep.truncated)
        return super()._process_transition(obs, policy_output, timestep)

    def _reset_collect(self, env_ids: Optional[Iterable[int]] = None) -> None:
        """New episodes in every env (env_ids None) start their returns afresh; the scaler itself restarts
        an env's return when its episode ends."""
        if env_ids is None and self._reward_scaler is not None:
            self._reward_scaler.restart()
        super()._reset_collect(env_ids)

    def _state_dict_collect(self) -> dict[str, Any]:
        """Each env's discounted return so far, which reward normalisation carries across steps."""
        state = super()._state_dict_collect()
        returns = None if self._reward_scaler is None else self._reward_scaler.returns_state()
        if returns is not None:
            state['reward_returns'] = returns
        return state

    def _load_state_dict_collect(self, state: dict[str, Any]) -> None:
        super()._load_state_dict_collect(state)
        if self._reward_scaler is not None and 'reward_returns' in state:
            self._reward_scaler.load_returns(state['reward_returns'])


def refuse_reward_normalization(cfg: Mapping[str, Any], why: str) -> None:
    """A one-line ConfigError where normalize.reward is on for a policy that cannot use it (`why`)."""
    if (cfg.get('normalize') or {}).get('reward', False):
        raise ConfigError(f"policy.normalize.reward cannot be used with policy '{cfg.get('type')}': {why}; "
                          f"set it to false")
