"""What the actor-critics of the rollout feed share: PPO (with PPG) and A2C.

Both act with the current policy for one rollout, score it with GAE(lambda) (Schulman et al. 2016, arXiv
1506.02438) on the values of the weights that collected it, bootstrapping where a time limit or the rollout's end
cuts an episode off and not where it terminated, and learn from it in the feed's minibatches; they differ in the
loss and in how often they pass over a rollout. Their shared config keys are declared once here, as
`MaxEntropyActorCritic` declares those of SAC and TAAC. Discrete actions come from a categorical distribution (with
an optional action mask, obs = {'observation', 'action_mask'}); continuous ones from a Gaussian with a
state-independent log std, learned from as sampled (the env adapter clips them). Observation normalisation and
reward scaling, as Stable-Baselines3's VecNormalize does them, are options whose statistics travel in the checkpoint
and apply at eval.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, NamedTuple, Optional

import torch
import torch.nn as nn
from torch.distributions import Distribution

from tidal.base.modes import ActingSteps, EnvLayout, Timestep, no_draw
from tidal.base.nest import leading_dim, shape_tuple, tree_map
from tidal.models.acting import ActingNetwork, HeadMode
from tidal.policies.base import MODES, Policy
from tidal.policies.common import adam, split_action_mask
from tidal.rl_utils import gae
from tidal.rl_utils.normalizer import RewardScaler, RunningMeanStd


class RolloutTD(NamedTuple):
    """A rollout's inputs to GAE, each [steps, envs], with learn.ignore_done applied to the flags."""

    reward: torch.Tensor
    value: torch.Tensor  # V(s_t) of the weights that collected the rollout
    next_value: torch.Tensor  # V(s_{t+1}): V(final obs) where an episode was cut off
    terminated: torch.Tensor  # no bootstrap
    done: torch.Tensor  # terminated or cut off: the lambda-recursion stops


class OnPolicyActorCritic(Policy):
    """A policy and a value head on the rollout feed, with GAE advantages; a subclass adds its loss (`_learn_plan`)
    and `learn.epoch_per_collect`."""

    config: dict = dict(
        normalize=dict(
            # (bool) Normalize observations by the running mean and std of those collected (VecNormalize);
            # the statistics are saved in checkpoints and used, frozen, at eval.
            obs=False,
            # (bool) Divide rewards by the running std of the discounted return (VecNormalize's reward scaling).
            reward=False,
            # (float > 0) Normalized observations and scaled rewards are clipped to [-clip, clip].
            clip=10.0,
        ),
        learn=dict(
            # (int > 0) Rows per minibatch; the last minibatch of a pass may be smaller.
            batch_size=64,
            # (float > 0) Adam learning rate.
            learning_rate=3e-4,
            # (float >= 0) Weight of the value function's squared error in the loss (c1 of PPO's eq. 9).
            value_weight=0.5,
            # (float >= 0) Weight of the policy's entropy bonus in the loss (c2 of PPO's eq. 9).
            entropy_weight=0.0,
            # (bool) Normalize the advantages of each minibatch to zero mean and unit std.
            adv_norm=True,
            # (float > 0 or None) Clip the global gradient norm to this (None: no clipping).
            grad_clip_norm=0.5,
        ),
        collect=dict(
            # (int > 0) Env steps per rollout, summed over the collector envs (rounded up to a multiple of
            # env.collector_env_num).
            n_sample=2048,
            # (float in [0, 1]) Discount factor gamma.
            discount_factor=0.99,
            # (float in [0, 1]) lambda of GAE (and of PPO's V-trace traces): 0 is the one-step TD error, 1 the
            # discounted return to the rollout's end, bootstrapped from the value there.
            gae_lambda=0.95,
        ),
    )
    pipeline = 'rollout'

    @classmethod
    def default_model(cls, cfg: Mapping[str, Any]) -> tuple[str, list[str]]:
        return 'actor_critic', ['tidal.models.actor_critic']

    def __init__(self, cfg: dict, model: Optional[nn.Module] = None, enable_field: Iterable[str] = MODES) -> None:
        self._obs_rms: Optional[RunningMeanStd] = None
        self._reward_scaler: Optional[RewardScaler] = None
        super().__init__(cfg, model, enable_field)

    def _build_model(self) -> nn.Module:
        """The model, and beside it the observation and reward statistics every mode uses."""
        normalize = self._cfg.normalize
        if normalize.obs:
            self._obs_rms = self.parts.statistics('obs_rms', RunningMeanStd(shape_tuple(self._cfg.model.obs_shape),
                                                                            self._device))
        if normalize.reward:
            self._reward_scaler = RewardScaler(self._cfg.collect.discount_factor, normalize.clip, self._device)
            self.parts.statistics('reward_rms', self._reward_scaler.return_rms)
        return super()._build_model()

    def _observation(self, obs: Any, update: bool = False) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(network input, action mask): the observation normalized by the running statistics, which
        `update` first extends with this batch (collection only)."""
        observation, mask = split_action_mask(obs)
        if self._obs_rms is not None:
            if update:
                self._obs_rms.update(observation)
            observation = self._obs_rms.normalize(observation, self._cfg.normalize.clip)
        return observation, mask

    def _evaluate(self, observation: torch.Tensor, mask: Optional[torch.Tensor]) -> tuple[Distribution, torch.Tensor]:
        """The action distribution and the value of a batch."""
        return self._model(observation, action_mask=mask)

    # ----- learn mode ------------------------------------------------------------------------
    def _init_learn(self) -> None:
        self._optimizer = self.parts.optimizer('optimizer', adam(self._model.parameters(), self._cfg.learn.learning_rate))

    # ----- collect mode ----------------------------------------------------------------------
    def _forward_collect(self, obs: Any, **kwargs: Any) -> dict[str, Any]:
        """Only the policy acts per step; values and log-probabilities come batched with the rollout."""
        return self._acting('collect').forward(obs)

    def _acting(self, mode: str) -> ActingSteps:
        """Collection samples on observations that first extend the running statistics; evaluation takes the most
        likely action under the frozen statistics (eval.deterministic), else samples from the eval generator."""
        if mode == 'collect':
            return ActingSteps(lambda obs: self._observation(obs, update=True), self._draw, _act_collect, self._model)
        if self._cfg.eval.deterministic:
            return ActingSteps(self._observation, no_draw, _act_greedy, self._model)
        return ActingSteps(self._observation, self._draw, _act_sampled, self._model, self._eval_generator)

    def _acting_steps(self, mode: str) -> Optional[ActingSteps]:
        return self._acting(mode)

    def _draw(self, inputs: tuple[Any, Optional[torch.Tensor]], generator: Optional[torch.Generator]
              ) -> torch.Tensor:
        """The noise of one sampled action per row of the (normalized) observations."""
        return self._model.policy_head.draw((leading_dim(inputs[0]),), generator)

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Timestep) -> dict[str, Any]:
        reward = timestep.reward.to(torch.float32)
        if self._reward_scaler is not None:
            reward = self._reward_scaler.scale(reward, timestep.terminated | timestep.truncated)
        # the value a cut-off episode bootstraps from: V(final obs), needed only where it was cut off
        cut = timestep.truncated | timestep.terminated if self._cfg.learn.ignore_done else timestep.truncated
        bootstrap_value = torch.zeros_like(reward)
        if bool(cut.any()):
            bootstrap_value[cut] = self._value_of(tree_map(lambda x: x[cut], timestep.next_obs))
        return {
            'obs': policy_output['obs'], 'action': policy_output['action'], 'reward': reward,
            'terminated': timestep.terminated, 'truncated': timestep.truncated, 'bootstrap_value': bootstrap_value,
            'next_obs': timestep.next_obs,  # the rollout's last step bootstraps from it
        }

    @torch.no_grad()
    def _value_of(self, obs: Any) -> torch.Tensor:
        observation, _ = self._observation(obs)
        return self._model.value(observation)

    def _get_train_sample(self, transitions: dict[str, Any], layout: EnvLayout) -> dict[str, Any]:
        """GAE advantages and returns of a rollout; truncated episodes bootstrap, terminated ones do not."""
        td = self._rollout_td(transitions, layout)
        advantage, returns = gae(td.reward, td.value, td.next_value, td.terminated, td.done,
                                 self._cfg.collect.discount_factor, self._cfg.collect.gae_lambda)
        transitions.update(value=td.value.reshape(-1), advantage=advantage.reshape(-1),
                           **{'return': returns.reshape(-1)})
        return transitions

    def _rollout_td(self, transitions: dict[str, Any], layout: EnvLayout) -> RolloutTD:
        """What GAE reads of a rollout, its columns taken out of `transitions` (`next_obs` too, of which only the
        last step's is read); the rows keep the behaviour's `log_prob` of their actions."""
        steps, envs = layout.steps, layout.num_envs

        def grid(key: str) -> torch.Tensor:
            return transitions.pop(key).reshape(steps, envs)

        # the network did not change during the rollout: one batched pass gives what acting would have
        with torch.no_grad():
            dist, value = self._evaluate(*split_action_mask(transitions['obs']))
            transitions['log_prob'] = dist.log_prob(transitions['action'])
        value = value.reshape(steps, envs)
        reward, bootstrap_value = grid('reward'), grid('bootstrap_value')
        last_next_obs = tree_map(lambda x: x[-envs:], transitions.pop('next_obs'))
        terminated, truncated = grid('terminated'), grid('truncated')
        if self._cfg.learn.ignore_done:
            truncated, terminated = truncated | terminated, torch.zeros_like(terminated)
        # V(s_{t+1}): the next row of the same env, V(final obs) where an episode was cut off, and past the
        # rollout's end the value of the obs the collector acts on next
        next_value = torch.cat([value[1:], self._value_of(last_next_obs).reshape(1, envs)])
        next_value = torch.where(truncated, bootstrap_value, next_value)
        return RolloutTD(reward, value, next_value, terminated, terminated | truncated)

    def _reset_collect(self, env_ids: Optional[Iterable[int]] = None) -> None:
        """New episodes in every env (env_ids None) start their discounted returns afresh; the scaler itself
        restarts an env's return when its episode ends."""
        if env_ids is None and self._reward_scaler is not None:
            self._reward_scaler.restart()

    def _state_dict_collect(self) -> dict[str, Any]:
        """Each env's discounted return so far, which reward scaling carries across steps."""
        returns = None if self._reward_scaler is None else self._reward_scaler.returns_state()
        return {} if returns is None else {'returns': returns}

    def _load_state_dict_collect(self, state: dict[str, Any]) -> None:
        if self._reward_scaler is not None and 'returns' in state:
            self._reward_scaler.load_returns(state['returns'])

    # ----- eval mode -------------------------------------------------------------------------
    def _forward_eval(self, obs: Any) -> dict[str, torch.Tensor]:
        """The most likely action under the frozen statistics (eval.deterministic), else one sampled as
        collection does."""
        return self._acting('eval').forward(obs)

    def export_actor(self, action_mask: bool = False) -> ActingNetwork:
        """The head's mode (argmax, or the Gaussian mean that the env adapter clips) behind the observation
        statistics of now, frozen with normalize.clip, as eval.deterministic acts."""
        normalizer = None if self._obs_rms is None else self._obs_rms.frozen(self._cfg.normalize.clip)
        return ActingNetwork(HeadMode(self._model.encoder, self._model.policy_head),
                             input_names=('obs', 'action_mask') if action_mask else ('obs',), obs_normalizer=normalizer)


# the acting steps of the modes (`ActingSteps.act`): module-level, so that they read nothing but the model
@torch.no_grad()
def _act_collect(model: Any, inputs: tuple[Any, Optional[torch.Tensor]], noise: torch.Tensor) -> dict[str, Any]:
    observation, mask = inputs
    return {
        # a Gaussian sample is learned from as drawn: the env adapter clips it to the env's bounds
        'action': model.act(observation, action_mask=mask, noise=noise),
        'obs': observation if mask is None else {'observation': observation, 'action_mask': mask},
    }


@torch.no_grad()
def _act_greedy(model: Any, inputs: tuple[Any, Optional[torch.Tensor]], noise: None) -> dict[str, torch.Tensor]:
    return {'action': model.act(inputs[0], action_mask=inputs[1], deterministic=True)}


@torch.no_grad()
def _act_sampled(model: Any, inputs: tuple[Any, Optional[torch.Tensor]], noise: torch.Tensor
                 ) -> dict[str, torch.Tensor]:
    return {'action': model.act(inputs[0], action_mask=inputs[1], noise=noise)}
