"""CrossQ: SAC without target networks, its critics batch-normalised over the joint batch of (s, a) and (s', a').

Bhatt et al. 2024, "CrossQ: Batch Normalization in Deep Reinforcement Learning for Greater Sample Efficiency and
Simplicity" (ICLR). The critics see the replayed (s, a) and the bootstrap's (s', a'), a' drawn by the current
actor, in one pass, so batch renormalisation normalises both by the same statistics; the TD target then needs no
slowly moving copy, and the critics can be wider and learn faster. The actor and the temperature step every
`learn.actor_update_freq` critic steps, on the critics held constant.

Modes come from the framework (`Parts.use_mode`): the critic step trains the critics and reads the actor as acting
does (its running statistics), the actor step trains the actor and reads the critics by their running statistics,
as the paper's code and Stable-Baselines3-contrib's CrossQ do.
"""
from __future__ import annotations

from typing import Any, Mapping

import torch

from tidal.base.errors import ConfigError
from tidal.base.stages import LearnPlan
from tidal.policies.common import UpdateCount, bootstrap_mask, sample_weight, td_reward
from tidal.policies.sac import SACPolicy
from tidal.registry import POLICY_REGISTRY
from tidal.rl_utils import v_1step_td_error

#: what the actor step logs: reported again by the critic steps between two actor steps
ACTOR_STEP_VALUES = ('policy_loss', 'entropy', 'alpha', 'alpha_loss')


@POLICY_REGISTRY.register('crossq')
class CrossQPolicy(SACPolicy):
    config = dict(
        type='crossq',
        # Stable-Baselines3-contrib's CrossQ defaults (its MuJoCo settings in the RL Zoo: 5000 random steps)
        random_collect_size=5000,
        learn=dict(
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            learning_rate_alpha=1e-3,
            # the temperature starts at 1 and is tuned towards the target entropy
            alpha=1.0,
            # Adam's first-moment decay of the paper (0.5)
            betas=[0.5, 0.999],
            # the actor head keeps PyTorch's default init
            init_w=0.0,
            # (int > 0) Critic steps per step of the actor and the temperature (the paper: 3).
            actor_update_freq=3,
            # CrossQ has no target network to move: a value other than 1.0 is refused.
            target_theta=1.0,
        ),
    )

    @classmethod
    def default_model(cls, cfg: Mapping[str, Any]) -> tuple[str, list[str]]:
        """Batch-renormalised actor and critics; the multi-agent form is SAC's alone."""
        if cfg.get('multi_agent'):
            raise ConfigError(f"policy '{cls.config['type']}' has no multi-agent form; config key "
                              f"'policy.multi_agent' must be False")
        return 'batch_renorm_qac', ['tidal.models.qac']

    def _init_learn(self) -> None:
        if self._cfg.learn.target_theta != 1.0:
            raise ConfigError(f"policy.learn.target_theta is {self._cfg.learn.target_theta}, but policy 'crossq' has no "
                              f"target network to move; remove the key")
        super()._init_learn()
        self._updates = self.parts.counter('updates', UpdateCount())  # critic steps: the actor step's clock
        # until the first actor step, its values as they stand at the start
        self._actor_step_values = dict(policy_loss=torch.zeros((), device=self._device),
                                       entropy=torch.zeros((), device=self._device),
                                       alpha=self._temperature.value.detach().clone(),
                                       alpha_loss=torch.zeros((), device=self._device))

    def _init_target_networks(self) -> None:
        """None: the critics' target reads the critics themselves, in the same pass as their estimate."""

    def _learn_plan(self, batch: dict[str, Any]) -> LearnPlan:
        """The critic step on the joint batch, then every actor_update_freq-th update one step of the actor and
        the temperature; the noise of both sampled actions is drawn here, in the order the steps use it (every
        update, so the random stream does not depend on the clock)."""
        self._draw_update_noise(batch)
        stages = [self._critic_stage()]
        self._updates.value += 1
        if self._updates.value % self._cfg.learn.actor_update_freq == 0:
            stages.append(self._policy_stage(seen=self._keep_actor_step_values))
        return LearnPlan(stages, info=dict(self._actor_step_values))

    def _keep_actor_step_values(self, values: dict[str, torch.Tensor]) -> None:
        self._actor_step_values = {key: values[key] for key in ACTOR_STEP_VALUES if key in values}

    def _critic_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """SAC's J_Q with the soft value of s' read from the critics themselves: Q(s, a) and Q(s', a') come from
        one pass over both halves of the joint batch, and the second half is held constant in the target."""
        obs, action, next_obs = batch['obs'], batch['action'], batch['next_obs']
        reward, discount = td_reward(batch, self._gamma)
        terminated = bootstrap_mask(batch, self._cfg.learn.ignore_done)
        weight = sample_weight(batch, self._cfg.priority_IS_weight)
        next_action, next_log_prob = self._next_action(next_obs, batch['next_noise'])
        joint_q = self._model.critic(torch.cat([obs, next_obs]), torch.cat([action, next_action]))
        q, next_q = joint_q.split(obs.shape[0], dim=1)
        with torch.no_grad():
            next_value = next_q.min(dim=0).values - self._temperature.value * next_log_prob
        critic_losses, td_error = v_1step_td_error(q, next_value, reward, terminated, discount, weight)
        return critic_losses.sum(), self._critic_info(critic_losses, td_error, q, next_value)
