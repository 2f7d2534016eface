"""Proximal Policy Optimization with a clipped surrogate objective.

Schulman et al. 2017, "Proximal Policy Optimization Algorithms" (arXiv 1707.06347), with the advantages
of GAE(lambda) (Schulman et al. 2016, arXiv 1506.02438). Discrete actions come from a categorical
distribution (with an optional action mask, obs = {'observation', 'action_mask'}); continuous ones from
a Gaussian with a state-independent log std, learned from as sampled (the env adapter clips them).
Observation normalisation and reward scaling, as Stable-Baselines3's VecNormalize does them, are
options whose statistics travel in the checkpoint and apply at eval. For rollouts collected by older weights
(collector.mode='async'), the learner can recompute the value targets and advantages with V-trace (Espeholt
et al. 2018, arXiv 1802.01561) before each rollout's epochs (learn.value_target).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping, Optional

import torch
import torch.nn as nn
from torch.distributions import Distribution

from tidal.base.errors import ConfigError
from tidal.models.acting import ActingNetwork, HeadMode
from tidal.policies.base import MODES, Policy
from tidal.policies.common import adam, run_plan, split_action_mask
from tidal.policies.compiled import set_learning_rate
from tidal.base.modes import ActingSteps, EnvLayout, LearnView, Timestep, no_draw
from tidal.base.stages import LearnPlan, LossStage
from tidal.registry import POLICY_REGISTRY
from tidal.rl_utils import explained_variance, gae, normalize_advantage, ppo_policy_loss, ppo_value_loss, vtrace
from tidal.rl_utils.normalizer import RewardScaler, RunningMeanStd
from tidal.base.nest import leading_dim, tree_map


def shape_tuple(shape: int | Iterable[int]) -> tuple[int, ...]:
    return (int(shape), ) if isinstance(shape, int) else tuple(int(size) for size in shape)


@POLICY_REGISTRY.register('ppo')
class PPOPolicy(Policy):
    config = dict(
        type='ppo',
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
            # (int in [1, 1000]) Passes over each rollout, in shuffled minibatches of batch_size.
            epoch_per_collect=10,
            # (int > 0) Rows per minibatch; the last minibatch of a pass may be smaller.
            batch_size=64,
            # (float > 0) Adam learning rate.
            learning_rate=3e-4,
            # (float > 0) Clip range epsilon of the probability ratio (eq. 7).
            clip_ratio=0.2,
            # (float > 0 or None) Clip range of the value prediction around its rollout value (PPO2's value
            # clipping); None trains the value on the plain squared error.
            value_clip_ratio=None,
            # (float >= 0) Weight of the value loss (c1 in eq. 9).
            value_weight=0.5,
            # (float >= 0) Weight of the entropy bonus (c2 in eq. 9).
            entropy_weight=0.0,
            # (bool) Normalize the advantages of each minibatch to zero mean and unit std.
            adv_norm=True,
            # (float > 0 or None) Clip the global gradient norm to this (None: no clipping).
            grad_clip_norm=0.5,
            # (bool) Decay the learning rate linearly to 0 over learn.decay_env_steps env steps.
            lr_decay=False,
            # (bool) Decay clip_ratio (and value_clip_ratio) linearly to 0 over learn.decay_env_steps env steps.
            clip_decay=False,
            # (int > 0 or None) Env steps over which lr_decay and clip_decay reach 0 (usually the run's budget).
            decay_env_steps=None,
            # (str in {'gae', 'vtrace'}) Value targets and advantages: 'gae' as collection computed them with the
            # behaviour weights; 'vtrace' recomputed with the learner's weights before a rollout's epochs (IMPALA's
            # V-trace, lambda = collect.gae_lambda), for rollouts that older weights collected (collector.mode='async').
            value_target='gae',
            # (float > 0) rho_bar of V-trace: clip of the importance ratios pi/mu that weight its TD errors and its
            # policy-gradient advantages.
            vtrace_rho_clip=1.0,
            # (float > 0) c_bar of V-trace: clip of the importance ratios in its traces (usually <= rho_bar).
            vtrace_c_clip=1.0,
        ),
        collect=dict(
            # (int > 0) Env steps per rollout, summed over the collector envs (rounded up to a multiple of
            # env.collector_env_num).
            n_sample=2048,
            # (float in [0, 1]) Discount factor gamma.
            discount_factor=0.99,
            # (float in [0, 1]) lambda of GAE (and of V-trace's traces): 0 is the one-step TD error, 1 the Monte
            # Carlo return.
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
            self._obs_rms = RunningMeanStd(shape_tuple(self._cfg.model.obs_shape), self._device)
        if normalize.reward:
            self._reward_scaler = RewardScaler(self._cfg.collect.discount_factor, normalize.clip, self._device)
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
        learn = self._cfg.learn
        if (learn.lr_decay or learn.clip_decay) and learn.decay_env_steps is None:
            raise ConfigError('policy.learn.decay_env_steps must be set (e.g. to the run budget) when '
                              'policy.learn.lr_decay or policy.learn.clip_decay is on')
        self._optimizer = adam(self._model.parameters(), learn.learning_rate)

    def _remaining(self, env_step: int) -> float:
        """The fraction of the decay schedule still ahead (1 at the start, 0 at decay_env_steps)."""
        decay = self._cfg.learn.decay_env_steps
        return 1.0 if decay is None else max(0.0, 1.0 - env_step / decay)

    def _set_learning_rate(self, optimizer: torch.optim.Optimizer, base: float, batch: dict[str, Any]) -> float:
        """Give `optimizer` the rate `base` decayed (with lr_decay) to the env step the batch was collected by."""
        lr = base * (self._remaining(int(batch.get('env_step', 0))) if self._cfg.learn.lr_decay else 1.0)
        set_learning_rate(optimizer, lr)
        return lr

    def _clip_ratios(self, batch: dict[str, Any]) -> tuple[float, Optional[float]]:
        """(clip ratio, value clip ratio), decayed (with clip_decay) to the env step of the batch."""
        learn = self._cfg.learn
        scale = self._remaining(int(batch.get('env_step', 0))) if learn.clip_decay else 1.0
        value_clip = None if learn.value_clip_ratio is None else learn.value_clip_ratio * scale
        return learn.clip_ratio * scale, value_clip

    def _ppo_loss(self, batch: dict[str, Any], clip: float | torch.Tensor, value_clip: Optional[float | torch.Tensor]
                  ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The PPO objective of one minibatch (eq. 9, as a loss to minimise) and what to log of it."""
        learn = self._cfg.learn
        observation, mask = split_action_mask(batch['obs'])  # normalized when it was collected
        dist, value = self._evaluate(observation, mask)
        advantage = batch['advantage']
        if learn.adv_norm:
            advantage = normalize_advantage(advantage)
        # clipped surrogate objective L^CLIP (eq. 7)
        policy_loss, approx_kl, clip_frac = ppo_policy_loss(dist.log_prob(batch['action']), batch['log_prob'],
                                                            advantage, clip)
        # squared-error value loss L^VF, optionally clipped around the rollout's value
        value_loss = ppo_value_loss(value, batch['value'], batch['return'], value_clip)
        entropy = dist.entropy().mean()
        loss = policy_loss + learn.value_weight * value_loss - learn.entropy_weight * entropy  # eq. 9
        return loss, {
            'policy_loss': policy_loss.detach(), 'value_loss': value_loss.detach(), 'entropy': entropy.detach(),
            'approx_kl': approx_kl, 'clip_frac': clip_frac,
            'explained_variance': explained_variance(batch['value'], batch['return']),
        }

    def _forward_learn(self, batch: dict[str, Any]) -> dict[str, Any]:
        return run_plan(self._learn_plan(batch), batch, self._compiled)

    @property
    def learn_mode(self) -> LearnView:
        return dataclasses.replace(super().learn_mode, prepare_rollout=self._prepare_rollout)

    def _prepare_rollout(self, rollout: dict[str, Any], layout: EnvLayout) -> None:
        """The rollout's value targets and advantages as learn.value_target asks, set in place before its epochs
        (PPG's aux phase then reads the same returns)."""
        if self._cfg.learn.value_target == 'vtrace':
            self._vtrace_targets(rollout, layout)

    @torch.no_grad()
    def _vtrace_targets(self, rollout: dict[str, Any], layout: EnvLayout) -> None:
        """V-trace targets (`return`), advantages (`advantage`) and values (`value`, which value clipping is
        around) of the learner's weights now, for a rollout that the behaviour weights mu collected.

        The ratio pi/mu is that of the rollout's actions, against the behaviour's `log_prob`, which the clipped
        loss keeps using. V(x_{s+1}) is the current value of the same env's next row while the episode goes on;
        where it was truncated, and past the rollout's last step, it is the behaviour's estimate that collection
        stored (`next_value`): the observations it was computed from are not in the rollout.
        """
        steps, envs = layout.steps, layout.num_envs

        def grid(key: str) -> torch.Tensor:
            return rollout.pop(key).reshape(steps, envs)

        dist, value = self._evaluate(*split_action_mask(rollout['obs']))  # obs normalized when collected
        log_rho = (dist.log_prob(rollout['action']) - rollout['log_prob']).reshape(steps, envs)
        value = value.reshape(steps, envs)
        reward, terminated, done, stored_next_value = grid('reward'), grid('terminated'), grid('done'), \
            grid('next_value')
        following = torch.cat([value[1:], stored_next_value[-1:]])  # the same env's next row, if any
        next_value = torch.where(done, stored_next_value, following)
        learn = self._cfg.learn
        returns, advantage = vtrace(reward, value, next_value, log_rho, terminated, done,
                                    self._cfg.collect.discount_factor, self._cfg.collect.gae_lambda,
                                    learn.vtrace_rho_clip, learn.vtrace_c_clip)  # eqs. 1 and 4
        rollout.update(value=value.reshape(-1), advantage=advantage.reshape(-1), **{'return': returns.reshape(-1)})

    def _learn_plan(self, batch: dict[str, Any]) -> LearnPlan:
        """One clipped step on the PPO loss, at the learning rate and clip ratio of the batch's env step."""
        lr = self._set_learning_rate(self._optimizer, self._cfg.learn.learning_rate, batch)
        clip, value_clip = self._clip_ratios(batch)
        clip_arg: float | torch.Tensor = clip
        value_clip_arg: Optional[float | torch.Tensor] = value_clip
        if self._compiled is not None and self._cfg.learn.clip_decay:  # decaying ratios reach it as tensors
            clip_arg = self._compiled.scalar('clip_ratio', clip)
            value_clip_arg = None if value_clip is None else self._compiled.scalar('value_clip_ratio', value_clip)
        stage = LossStage(self._optimizer, lambda rows: self._ppo_loss(rows, clip_arg, value_clip_arg),
                          self._cfg.learn.grad_clip_norm)
        return LearnPlan([stage], {'learning_rate': torch.tensor(lr), 'clip_ratio': torch.tensor(clip)})

    def _optimizers_learn(self) -> list[torch.optim.Optimizer]:
        return [self._optimizer]

    def _monitor_vars_learn(self) -> list[str]:
        return ['total_loss', 'policy_loss', 'value_loss', 'entropy', 'approx_kl', 'clip_frac',
                'explained_variance', 'grad_norm', 'learning_rate', 'clip_ratio']

    def _state_dict_learn(self) -> dict[str, Any]:
        # the weights hold the statistics; each env's running return is collect state
        return {**self.weights(), 'optimizer': self._optimizer.state_dict()}

    def _load_state_dict_learn(self, state: dict[str, Any]) -> None:
        self.load_weights(state)
        self._optimizer.load_state_dict(state['optimizer'])

    def running_statistics(self) -> dict[str, RunningMeanStd]:
        """The observation and return statistics that acting updates and every mode reads."""
        stats = {}
        if self._obs_rms is not None:
            stats['obs_rms'] = self._obs_rms
        if self._reward_scaler is not None:
            stats['reward_rms'] = self._reward_scaler.return_rms
        return stats

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
        self._next_obs = timestep.next_obs  # the rollout's last step bootstraps from it
        return {
            'obs': policy_output['obs'], 'action': policy_output['action'], 'reward': reward,
            'terminated': timestep.terminated, 'truncated': timestep.truncated, 'bootstrap_value': bootstrap_value,
        }

    @torch.no_grad()
    def _value_of(self, obs: Any) -> torch.Tensor:
        observation, _ = self._observation(obs)
        return self._model.value(observation)

    def _get_train_sample(self, transitions: dict[str, Any], layout: EnvLayout) -> dict[str, Any]:
        """GAE advantages and returns of a rollout; truncated episodes bootstrap, terminated ones do not. With
        learn.value_target='vtrace' the rows also keep what the learner's V-trace reads (`_vtrace_targets`)."""
        steps, envs = layout.steps, layout.num_envs

        def grid(key: str) -> torch.Tensor:
            return transitions.pop(key).reshape(steps, envs)

        # the network did not change during the rollout: one batched pass gives what acting would have
        with torch.no_grad():
            dist, value = self._evaluate(*split_action_mask(transitions['obs']))
            transitions['log_prob'] = dist.log_prob(transitions['action'])
        value = value.reshape(steps, envs)
        reward, bootstrap_value = grid('reward'), grid('bootstrap_value')
        terminated, truncated = grid('terminated'), grid('truncated')
        if self._cfg.learn.ignore_done:
            truncated, terminated = truncated | terminated, torch.zeros_like(terminated)
        # V(s_{t+1}): the next row of the same env, V(final obs) where an episode was cut off, and past the
        # rollout's end the value of the obs the collector acts on next
        next_value = torch.cat([value[1:], self._value_of(self._next_obs).reshape(1, envs)])
        next_value = torch.where(truncated, bootstrap_value, next_value)
        advantage, returns = gae(reward, value, next_value, terminated, terminated | truncated,
                                 self._cfg.collect.discount_factor, self._cfg.collect.gae_lambda)
        transitions.update(value=value.reshape(-1), advantage=advantage.reshape(-1), **{'return': returns.reshape(-1)})
        if self._cfg.learn.value_target == 'vtrace':  # the flags as GAE read them (learn.ignore_done applied)
            transitions.update(reward=reward.reshape(-1), terminated=terminated.reshape(-1),
                               done=(terminated | truncated).reshape(-1), next_value=next_value.reshape(-1))
        return transitions

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


# the acting steps of PPO's modes (`ActingSteps.act`): module-level, so that they read nothing but the model
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
