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
from typing import Any, Optional

import torch

from tidal.base.errors import ConfigError
from tidal.policies.common import split_action_mask
from tidal.policies.compiled import set_learning_rate
from tidal.policies.on_policy import OnPolicyActorCritic, RolloutTD
from tidal.base.modes import EnvLayout, LearnView
from tidal.base.stages import LearnPlan, LossStage
from tidal.registry import POLICY_REGISTRY
from tidal.rl_utils import explained_variance, normalize_advantage, ppo_policy_loss, ppo_value_loss, vtrace


@POLICY_REGISTRY.register('ppo')
class PPOPolicy(OnPolicyActorCritic):
    config = dict(
        type='ppo',
        learn=dict(
            # (int in [1, 1000]) Passes over each rollout, in shuffled minibatches of batch_size.
            epoch_per_collect=10,
            # (float > 0) Clip range epsilon of the probability ratio (eq. 7).
            clip_ratio=0.2,
            # (float > 0 or None) Clip range of the value prediction around its rollout value (PPO2's value
            # clipping); None trains the value on the plain squared error.
            value_clip_ratio=None,
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
    )

    # ----- learn mode ------------------------------------------------------------------------
    def _init_learn(self) -> None:
        learn = self._cfg.learn
        if (learn.lr_decay or learn.clip_decay) and learn.decay_env_steps is None:
            raise ConfigError('policy.learn.decay_env_steps must be set (e.g. to the run budget) when '
                              'policy.learn.lr_decay or policy.learn.clip_decay is on')
        super()._init_learn()

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

    def _monitor_vars_learn(self) -> list[str]:
        return ['total_loss', 'policy_loss', 'value_loss', 'entropy', 'approx_kl', 'clip_frac',
                'explained_variance', 'grad_norm', 'learning_rate', 'clip_ratio']

    # ----- collect mode ----------------------------------------------------------------------
    def _rollout_td(self, transitions: dict[str, Any], layout: EnvLayout) -> RolloutTD:
        """With learn.value_target='vtrace' the rows also keep what the learner's V-trace reads (`_vtrace_targets`):
        the flags as GAE read them (learn.ignore_done applied) and V(s_{t+1})."""
        td = super()._rollout_td(transitions, layout)
        if self._cfg.learn.value_target == 'vtrace':
            transitions.update(reward=td.reward.reshape(-1), terminated=td.terminated.reshape(-1),
                               done=td.done.reshape(-1), next_value=td.next_value.reshape(-1))
        return td
