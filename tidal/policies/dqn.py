"""Deep Q-Network and its standard refinements.

Mnih et al. 2015, "Human-level control through deep reinforcement learning" (Nature 518): a Q-network regressed
to r + gamma max_a' Q_target(s', a') on replayed transitions, with a target network that follows it slowly, and
epsilon-greedy collection. With `learn.double_q` (on, as in DI-engine) the online network picks a' and the target
network values it (van Hasselt et al. 2016, arXiv 1509.06461); the model's `dueling` head splits Q into V + A
(Wang et al. 2016, arXiv 1511.06581); `nstep` bootstraps after n rewards; `priority` replays by TD error
(Schaul et al. 2016, arXiv 1511.05952). Observations may be a dict with 'observation' and 'action_mask'
(1 = allowed): the greedy action, the bootstrap's max and random actions keep to the allowed ones.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

import torch
import torch.nn.functional as F

from tidal.base.modes import ActingSteps, Timestep, no_draw
from tidal.base.nest import leading_dim
from tidal.base.stages import LearnPlan, LossStage
from tidal.models import TargetNetwork
from tidal.models.acting import ActingNetwork, MaskedArgmax
from tidal.policies.base import Policy
from tidal.policies.common import (EpsilonClock, UpdateCount, adam, bootstrap_mask, sample_categorical,
                                   sample_weight, split_action_mask, td_reward)
from tidal.registry import POLICY_REGISTRY
from tidal.rl_utils import gather_action, masked_logits, td_target


@POLICY_REGISTRY.register('dqn')
class DQNPolicy(Policy):
    config = dict(
        type='dqn',
        # (float in [0, 1]) Discount factor gamma of the TD target.
        discount_factor=0.97,
        # (int in [1, 1000]) Rewards summed before the target bootstraps (n-step returns); a window never
        # crosses an episode's end.
        nstep=1,
        learn=dict(
            update_per_collect=3,
            batch_size=64,
            # (float > 0) Adam learning rate.
            learning_rate=0.001,
            # (int >= 0) Copy the network into the target network every this many updates; 0: follow it by
            # Polyak averaging with target_theta after every update instead.
            target_update_freq=100,
            # (float in (0, 1]) Polyak factor of the target network when target_update_freq is 0.
            target_theta=0.005,
            # (bool) Double Q-learning: the online network picks the bootstrap's action, the target network
            # values it (False: the target network's own max, as in the Nature DQN).
            double_q=True,
            # (str in {'mse', 'huber'}) The TD loss: squared error (DI-engine) or Huber (smooth L1, the Nature
            # DQN's clipped error and SB3's).
            loss='mse',
            # (float > 0 or None) Clip the gradient norm at this value; None: no clipping.
            grad_clip_norm=None,
        ),
        collect=dict(n_sample=8),
        other=dict(
            eps=dict(
                # (str in {'linear', 'exp'}) How epsilon falls with the env steps collected (warm-up included):
                # 'linear' reaches end at `decay` steps, 'exp' is end + (start - end) e^(-steps / decay).
                type='exp',
                # (float in [0, 1]) epsilon at env step 0.
                start=0.95,
                # (float in [0, 1]) epsilon once decayed.
                end=0.1,
                # (int > 0) Env steps (over all collector envs) of the decay, see type.
                decay=10_000,
            ),
            replay_buffer=dict(
                replay_buffer_size=10_000,
                # (int >= 0) Prioritized replay: sampled batches (one per update) over which beta anneals linearly
                # from `beta` to 1, as the paper anneals it over training (0 keeps beta fixed). 20k is about a
                # CartPole run's updates; a longer run sets its own, env steps / n_sample * update_per_collect.
                anneal_step=20_000,
            ),
        ),
    )
    action_space = 'discrete'

    @classmethod
    def default_model(cls, cfg: Mapping[str, Any]) -> tuple[str, list[str]]:
        return 'dqn', ['tidal.models.q_network']

    # ----- learn mode ------------------------------------------------------------------------
    def _init_learn(self) -> None:
        learn = self._cfg.learn
        self._gamma = self._cfg.discount_factor
        self._optimizer = self.parts.optimizer('optimizer', adam(self._model.parameters(), learn.learning_rate))
        self._target = self.parts.target('target', TargetNetwork(self._model))
        self._updates = self.parts.counter('updates', UpdateCount())  # the clock of the target network's copies

    def _learn_plan(self, batch: dict[str, Any]) -> LearnPlan:
        """One step on the TD loss, then the target network's update."""
        stage = LossStage(self._optimizer, self._q_loss, self._cfg.learn.grad_clip_norm,
                          norm_key=None if self._cfg.learn.grad_clip_norm is None else 'grad_norm')
        return LearnPlan([stage], after=self._update_target)

    def _q_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        observation, _ = split_action_mask(batch['obs'])
        return self._td_loss(batch, self._model(observation))

    def _td_loss(self, batch: dict[str, Any], q_all: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """(Q(s, a) - y)^2 with y = R + gamma^n (1 - terminated) V(s'), V the bootstrap's value (`_next_value`);
        `q_all` [B, A] are the network's values of every action at s."""
        q = gather_action(q_all, batch['action'])
        with torch.no_grad():
            reward, discount = td_reward(batch, self._gamma)
            target = td_target(reward, self._next_value(*split_action_mask(batch['next_obs'])),
                               bootstrap_mask(batch, self._cfg.learn.ignore_done), discount)
        td_error = target - q
        if self._cfg.learn.loss == 'huber':
            per_sample = F.smooth_l1_loss(q, target, reduction='none')
        else:
            per_sample = td_error.pow(2)
        weight = sample_weight(batch, self._cfg.priority_IS_weight)
        loss = (per_sample * weight).mean() if weight is not None else per_sample.mean()
        return loss, {'q_value': q.detach().mean(), 'target_q_value': target.mean(),
                      'td_error': td_error.detach().abs().mean(), 'priority': td_error.detach().abs()}

    def _next_value(self, next_observation: Any, next_mask: Optional[torch.Tensor]) -> torch.Tensor:
        """The bootstrap's value of s' [B]: Q_target(s', a'), a' the greedy allowed action of the online network
        (double Q) or of the target network."""
        next_q = self._target(next_observation)
        chooser = self._model(next_observation) if self._cfg.learn.double_q else next_q
        return gather_action(next_q, masked_logits(chooser, next_mask).argmax(dim=-1))

    def _update_target(self) -> None:
        self._updates.value += 1
        freq = self._cfg.learn.target_update_freq
        if not freq:
            self._target.update(self._cfg.learn.target_theta)
        elif self._updates.value % freq == 0:
            self._target.update(1.0)

    def _monitor_vars_learn(self) -> list[str]:
        return ['total_loss', 'q_value', 'target_q_value', 'td_error']

    # ----- collect and eval ------------------------------------------------------------------
    def _init_collect(self) -> None:
        self._epsilon_clock = EpsilonClock(self._cfg.other.eps)

    def epsilon(self) -> float:
        """The epsilon of epsilon-greedy collection now."""
        return self._epsilon_clock.epsilon()

    def _forward_collect(self, obs: Any, **kwargs: Any) -> dict[str, torch.Tensor]:
        return self._acting('collect').forward(obs)

    def _forward_eval(self, obs: Any) -> dict[str, torch.Tensor]:
        return self._acting('eval').forward(obs)

    def _acting_steps(self, mode: str) -> Optional[ActingSteps]:
        return self._acting(mode)

    def _acting(self, mode: str) -> ActingSteps:
        """Epsilon-greedy collection; evaluation takes the greedy allowed action."""
        if mode == 'collect':
            return ActingSteps(split_action_mask, self._draw_exploration, _act_epsilon_greedy, self._model)
        return ActingSteps(split_action_mask, no_draw, _act_greedy, self._model)

    def _draw_exploration(self, inputs: tuple[Any, Optional[torch.Tensor]],
                          generator: Optional[torch.Generator]) -> tuple[torch.Tensor, torch.Tensor]:
        """(which envs explore [B], a uniformly random allowed action for each [B]): one coin per env, below
        epsilon, and the action it would take."""
        observation, mask = inputs
        rows = leading_dim(observation)
        coin = torch.rand(rows, device=self._device, generator=generator)
        return coin < self.epsilon(), self._uniform_action(rows, mask, generator)

    def _uniform_action(self, rows: int, mask: Optional[torch.Tensor],
                        generator: Optional[torch.Generator] = None) -> torch.Tensor:
        """A uniformly random allowed action per row [rows] (every action without a mask)."""
        if mask is None:
            return torch.randint(self._model.action_dim, (rows, ), device=self._device, generator=generator)
        return sample_categorical(mask.float(), generator)

    def _process_transition(self, obs: Any, policy_output: dict[str, torch.Tensor],
                            timestep: Timestep) -> dict[str, Any]:
        self._epsilon_clock.tick(int(timestep.terminated.shape[0]))
        return super()._process_transition(obs, policy_output, timestep)

    def _state_dict_collect(self) -> dict[str, Any]:
        return self._epsilon_clock.state_dict()

    def _load_state_dict_collect(self, state: dict[str, Any]) -> None:
        self._epsilon_clock.load_state_dict(state)

    def _random_action(self, obs: Any) -> dict[str, torch.Tensor]:
        observation, mask = split_action_mask(obs)
        return {'action': self._uniform_action(leading_dim(observation), mask)}

    def export_actor(self, action_mask: bool = False) -> ActingNetwork:
        """The greedy allowed action, as evaluation acts."""
        return ActingNetwork(MaskedArgmax(self._model), input_names=('obs', 'action_mask') if action_mask else ('obs',))


# the acting steps of DQN's modes (`ActingSteps`): module-level, so that they read nothing but the model
@torch.no_grad()
def _act_greedy(model: Any, inputs: tuple[Any, Optional[torch.Tensor]], noise: None) -> dict[str, torch.Tensor]:
    observation, mask = inputs
    return {'action': masked_logits(model(observation), mask).argmax(dim=-1)}


@torch.no_grad()
def _act_epsilon_greedy(model: Any, inputs: tuple[Any, Optional[torch.Tensor]],
                        noise: tuple[torch.Tensor, torch.Tensor]) -> dict[str, torch.Tensor]:
    explore, random_action = noise
    greedy = _act_greedy(model, inputs, None)['action']
    return {'action': torch.where(explore, random_action, greedy)}
