"""Temporally abstract actor-critic: TAAC, and TaacL / TaacQ with linear and quadratic trajectories.

Yu et al. 2021, "TAAC: Temporally Abstract Actor-Critic for Continuous Control" (arXiv 2104.06521).
SAC's actor proposes a new trajectory at every step; a second stage then samples a switch b from
exp(Q / alpha_b) over (keep following the previous trajectory, take the new one), so actions persist
for as long as the critic sees no gain in changing them. The critics learn from replayed sequences
with the compare-through operator: rewards are followed for as long as neither the rollout nor the
current policy switched, and the actor's dQ/da is scaled by the probability of switching.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, NamedTuple, Optional

import torch
import torch.nn.functional as F

from tidal.base.errors import ConfigError
from tidal.models import TargetNetwork, Temperature
from tidal.models.acting import ActingNetwork, GreedyTrajectorySwitch
from tidal.models.taac import keep_or_switch_values, switch_from_exponentials
from tidal.base.device import policy_device
from tidal.base.stages import LearnPlan, LossStage
from tidal.policies.common import adam, bootstrap_mask
from tidal.policies.max_entropy import MaxEntropyActorCritic
from tidal.registry import POLICY_REGISTRY
from tidal.rl_utils import StepType, compare_through_return, step_type, tanh_gaussian_sample
from tidal.rl_utils.trajectory import (ConstantTrajectory, LinearTrajectory, QuadraticTrajectory, Trajectory,
                                       select_trajectory, switch_logits)

# entropy of a switch that is taken with probability 0.1 (or 0.9): -(0.9 ln 0.9 + 0.1 ln 0.1) nats
DECISIVE_SWITCH_ENTROPY = 0.325


class TwoStage(NamedTuple):
    """One pass of the two-stage policy over a batch."""

    action: torch.Tensor  # the proposed new action [B, A]
    log_prob: torch.Tensor  # its log-probability [B]
    kept: torch.Tensor  # the previous trajectory advanced one step [B, K, A]
    new: torch.Tensor  # the trajectory the new action starts [B, K, A]
    q: torch.Tensor  # critics' minimum for (kept, new) [B, 2]
    logits: torch.Tensor  # switch logits over (keep, new) [B, 2]


class TrajectoryState:
    """Each env's current trajectory [N, K, A] and how many steps it has been followed [N]."""

    def __init__(self, trajectory: Trajectory, action_dim: int, device: torch.device, randomize: bool) -> None:
        self.trajectory, self.action_dim, self.device, self.randomize = trajectory, action_dim, device, randomize
        # no env yet: sized by the first batch of observations
        self.tau: torch.Tensor = trajectory.zeros(0, action_dim, device)
        self.repeats: torch.Tensor = torch.zeros(0, dtype=torch.long, device=device)

    def ensure(self, num_envs: int) -> None:
        """Start every env's first episode (sized by the first batch of observations)."""
        if self.tau.shape[0] != num_envs:
            self.tau = self.trajectory.zeros(num_envs, self.action_dim, self.device)
            self.repeats = torch.zeros(num_envs, dtype=torch.long, device=self.device)
            self.reset(None)

    def reset(self, env_ids: Optional[Iterable[int]]) -> None:
        """A new episode for `env_ids` (None: all envs): a zero (or, randomized, uniform) trajectory.

        The state gets new tensors rather than being written in place: the last step's outputs, which
        hold the old ones, are stored after the envs that ended are reset.
        """
        if self.tau.shape[0] == 0:
            return
        rows = slice(None) if env_ids is None else torch.as_tensor(list(env_ids), dtype=torch.long,
                                                                   device=self.device)
        self.tau, self.repeats = self.tau.clone(), self.repeats.clone()
        if self.randomize:
            self.tau[rows] = torch.rand_like(self.tau[rows]) * 2.0 - 1.0
        else:
            self.tau[rows] = 0.0
        self.repeats[rows] = 0

    def state_dict(self) -> dict[str, Any]:
        """The trajectories the envs follow now, so a resumed run continues them."""
        return {} if self.tau.shape[0] == 0 else {'tau': self.tau.clone(), 'repeats': self.repeats.clone()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if 'tau' in state:
            self.tau, self.repeats = state['tau'].to(self.device), state['repeats'].to(self.device)


@POLICY_REGISTRY.register('taac')
class TAACPolicy(MaxEntropyActorCritic):
    config = dict(
        type='taac',
        learn=dict(
            # (int > 0) Sequences of collect.unroll_len steps per gradient update.
            batch_size=64,
            # (float > 0) Temperature of the switch: b ~ exp(Q / switch_alpha); its initial value with auto_alpha.
            switch_alpha=1.0,
            # (float in [0, 0.693] or None) Target entropy of the switch, in nats, at most ln 2 (a fair coin);
            # None means 0.325, a switch taken with p 0.1 or 0.9.
            switch_target_entropy=None,
            # (list[float] of length 2 or None) [low, high] clamp of the advantage Q(new) - Q(keep) inside the
            # switch; None: no clamp.
            switch_advantage_clip=None,
        ),
        collect=dict(
            # (int >= 2) Steps per replayed training sequence; the compare-through return runs along it.
            unroll_len=4,
        ),
        eval=dict(
            # (float in [0, 1]) With eval.deterministic, the chance per step that evaluation samples the action and
            # the switch instead of taking the most likely ones.
            epsilon_greedy=0.1,
            evaluator=dict(
                # (int >= 0) Also evaluate every this many env steps (0 = off): off here, the schedule TAAC's
                # benchmarks ran with (when evaluation still drew from the global generator and changed training).
                eval_freq_env_steps=0,
            ),
        ),
        trajectory=dict(
            # (int >= 0) Force a switch after a trajectory was followed this many steps, in collect and eval
            # (never in training targets); 0: no limit.
            max_repeat_steps=0,
            # (bool) Start episodes from a uniform random trajectory instead of zeros (collect only).
            randomize_first_state_tau=False,
        ),
    )
    action_space = 'continuous'
    trajectory_cls: type[Trajectory] = ConstantTrajectory

    @classmethod
    def default_model(cls, cfg: Mapping[str, Any]) -> tuple[str, list[str]]:
        return 'trajectory_qac', ['tidal.models.taac']

    def __init__(self, cfg: dict, *args: Any, **kwargs: Any) -> None:
        trajectory_cfg = cfg['trajectory']
        self._trajectory = self.trajectory_cls(trajectory_cfg.get('inverse_mode', True))
        self._max_repeat_steps = int(trajectory_cfg['max_repeat_steps'])
        if self._max_repeat_steps < 0:
            raise ConfigError(f'policy.trajectory.max_repeat_steps must be >= 0 (0: no limit), '
                              f'got {self._max_repeat_steps}')
        clip = cfg['learn'].get('switch_advantage_clip')
        if clip is not None and (len(clip) != 2 or float(clip[0]) > float(clip[1])):
            raise ConfigError(f'policy.learn.switch_advantage_clip must be [low, high] with low <= high, got {clip}')
        self._advantage_clip = None if clip is None else (float(clip[0]), float(clip[1]))
        # the temperatures exist in every mode: collection samples its switches with the learned one
        learn, device = cfg['learn'], policy_device(cfg)
        self._temperature = self.parts.scalar('temperature', Temperature(learn['alpha'], learn['auto_alpha']).to(device))
        self._switch_temperature = self.parts.scalar('switch_temperature', Temperature(
            learn['switch_alpha'], learn['auto_alpha'], key='policy.learn.switch_alpha').to(device), acting=True)
        super().__init__(cfg, *args, **kwargs)

    def _model_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        size = kwargs.setdefault('trajectory_size', self._trajectory.size)
        if size != self._trajectory.size:
            raise ConfigError(f'policy.model.trajectory_size is {size} but {self._cfg.type} trajectories have '
                              f'{self._trajectory.size} components; leave the key out')
        return kwargs

    # ----- learn mode ------------------------------------------------------------------------
    def _init_learn(self) -> None:
        learn = self._cfg.learn
        if self._cfg.collect.unroll_len < 2:
            raise ConfigError(f'policy.collect.unroll_len must be >= 2 for {self._cfg.type}: the compare-through '
                              f'return runs along replayed sequences, got {self._cfg.collect.unroll_len}')
        self._gamma, self._target_theta = learn.discount_factor, learn.target_theta
        if learn.init_w:
            self._model.actor_head.init_uniform(learn.init_w)
        self._target_entropy = self._configured_target_entropy(self._model.action_dim,
                                                               -float(self._model.action_dim))
        self._switch_target_entropy = (DECISIVE_SWITCH_ENTROPY if learn.switch_target_entropy is None
                                       else float(learn.switch_target_entropy))
        # every loss sees the other networks' outputs detached, so one backward and one fused Adam
        # step over all parameter groups equal separate updates from the same parameters
        groups = [{'params': list(self._model.critic.parameters()), 'lr': learn.learning_rate_q},
                  {'params': self._model.actor_parameters(), 'lr': learn.learning_rate_policy}]
        if learn.auto_alpha:
            groups.append({'params': [self._temperature.raw, self._switch_temperature.raw],
                           'lr': learn.learning_rate_alpha})
        self._optimizer = self.parts.optimizer('optimizer', adam(groups, learn.learning_rate_policy))
        self._target_critic = self.parts.target('target_critic', TargetNetwork(self._model.critic))

    def _learn_plan(self, batch: dict[str, Any]) -> LearnPlan:
        """One step of critics, actor and temperatures on one loss, then the Polyak update. The loss's random
        numbers are drawn here in the order it uses them: the successors' action noise, the exponentials of
        their switch (what torch.multinomial draws), the actions' noise. The rewards are scaled first
        (normalize.reward)."""
        self._normalize_reward(batch)
        rows = batch['reward'].numel()
        batch['next_noise'] = torch.randn(rows, self._model.action_dim, device=self._device)
        batch['switch_noise'] = torch.empty(rows, 2, device=self._device).exponential_()
        batch['noise'] = torch.randn(rows, self._model.action_dim, device=self._device)
        stage = LossStage(self._optimizer, self._loss, None, loss_key=None, norm_key=None)
        return LearnPlan([stage], after=lambda: self._target_critic.update(self._target_theta))

    def _loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Every loss of TAAC in one (each sees the other networks' outputs detached) and its monitors."""
        reward = batch['reward']
        num, length = reward.shape
        flat = {key: batch[key].flatten(0, 1) for key in ('obs', 'next_obs', 'prev_tau', 'tau')}
        alpha, switch_alpha = self._temperature.value, self._switch_temperature.value

        # 1. the two-stage policy at each step's successor (s_{t+1}, tau_t): its switch decides where the
        #    compare-through return stops and its value V(s_{t+1}) = E_b[Q'(s_{t+1}, tau_b)] is bootstrapped
        #    (as in the authors' implementation, the target carries no entropy bonus)
        with torch.no_grad():
            successor = self._two_stage(flat['next_obs'], flat['tau'], switch_alpha, noise=batch['next_noise'])
            next_probs = successor.logits.softmax(-1)
            next_switch = switch_from_exponentials(next_probs, batch['switch_noise'])
            target_q = keep_or_switch_values(self._target_critic, flat['next_obs'], successor.kept, successor.new)
            next_value = (next_probs * target_q).sum(-1).reshape(num, length)

        # 2. compare-through return (the paper's eq. 9)
        returns = self._compare_through_target(batch, next_value, next_switch.reshape(num, length)).flatten()

        # 3. critic loss: each critic's Q(s_t, tau_t) of the rollout's trajectory regressed to the return
        q = self._model.critic(flat['obs'], flat['tau'])
        td_error = returns - q
        critic_losses = td_error.pow(2).mean(dim=-1)

        # 4. actor loss (eq. 11): SAC's, with dQ/da scaled by the probability of switching to the new action
        stage = self._two_stage(flat['obs'], flat['prev_tau'], switch_alpha, grad_to_action=True,
                                noise=batch['noise'])
        log_prob, logits = stage.log_prob, stage.logits
        switch_prob = logits.softmax(-1)
        policy_loss = (alpha * log_prob - switch_prob[:, 1] * stage.q[:, 1]).mean()

        # 5. temperature losses: the action's and the switch's entropies towards their targets
        switch_entropy = -(switch_prob * logits.log_softmax(-1)).sum(-1)
        loss = critic_losses.sum() + policy_loss
        info: dict[str, torch.Tensor] = {}
        if self._temperature.auto:
            alpha_loss = (self._temperature.loss(log_prob, self._target_entropy)
                          + self._switch_temperature.loss(-switch_entropy, self._switch_target_entropy))
            loss = loss + alpha_loss
            info['alpha_loss'] = alpha_loss.detach()
        info.update(
            critic_loss=critic_losses[0].detach(), policy_loss=policy_loss.detach(), alpha=alpha,
            switch_alpha=switch_alpha, q_value=q.detach().mean(), target_q_value=returns.mean(),
            td_error=td_error.detach().abs().mean(), entropy=-log_prob.detach().mean(),
            switch_entropy=switch_entropy.mean(), switch_prob=switch_prob[:, 1].mean(),
            advantage=(stage.q[:, 1] - stage.q[:, 0]).detach().mean(), train_switch_rate=next_switch.float().mean(),
            rollout_switch_rate=batch['switch'].float().mean())
        if len(critic_losses) > 1:
            info['twin_critic_loss'] = critic_losses[1].detach()
        return loss, info

    def _compare_through_target(self, batch: dict[str, Any], next_value: torch.Tensor,
                                next_switch: torch.Tensor) -> torch.Tensor:
        """Returns [B, T] that follow rewards until the episode ends, the rollout or the current policy
        (`next_switch`, sampled at each successor) switches at the next step, or the next step opens a
        new episode; there they bootstrap from `next_value` [B, T]."""
        done = batch['terminated'].bool() | batch['truncated'].bool()
        rollout_switched = F.pad(batch['switch'][:, 1:].bool(), (0, 1), value=True)
        next_first = F.pad(batch['step_type'][:, 1:] == int(StepType.FIRST), (0, 1), value=True)
        cut = done | rollout_switched | next_first | next_switch
        discount = self._gamma * (1.0 - bootstrap_mask(batch, self._cfg.learn.ignore_done))
        return compare_through_return(batch['reward'], next_value, discount, cut)

    def _two_stage(self, obs: torch.Tensor, prev_tau: torch.Tensor, switch_alpha: torch.Tensor,
                   epsilon: Optional[float] = None, grad_to_action: bool = False,
                   generator: Optional[torch.Generator] = None, noise: Optional[torch.Tensor] = None) -> TwoStage:
        """Stage 1 proposes a new action (a sample, or epsilon-greedy when `epsilon` is given), its noise
        `noise` or drawn from `generator` (torch's global one when None); stage 2 scores keeping `prev_tau`
        against the new trajectory. With `grad_to_action` Q(s, new) stays differentiable in the action, for the
        actor loss, the critics read as constants; without it Q is detached."""
        mu, log_std = self._model.actor(obs, prev_tau)
        if epsilon is None:
            action, log_prob = tanh_gaussian_sample(mu, log_std, generator, noise)
        else:
            action, log_prob = _epsilon_greedy_action(mu, log_std, epsilon, generator)
        kept = self._trajectory.advance(prev_tau)
        new = self._trajectory.from_action(action, prev_tau)
        q = keep_or_switch_values(self._model.critic, obs, kept, new, constant=grad_to_action)
        if not grad_to_action:
            q = q.detach()
        logits = switch_logits(q[:, 0].detach(), q[:, 1].detach(), switch_alpha, self._advantage_clip)
        return TwoStage(action, log_prob, kept, new, q, logits)

    def _monitor_vars_learn(self) -> list[str]:
        names = ['critic_loss', 'policy_loss', 'alpha', 'switch_alpha', 'q_value', 'target_q_value', 'td_error',
                 'entropy', 'switch_entropy', 'switch_prob', 'advantage', 'train_switch_rate',
                 'rollout_switch_rate']
        if self._cfg.model.get('twin_critic', True):
            names.append('twin_critic_loss')
        if self._cfg.learn.auto_alpha:
            names.append('alpha_loss')
        return names

    # ----- collect and eval: each env follows its trajectory until the switch says otherwise --------
    def _init_collect(self) -> None:
        self._collect_state = TrajectoryState(self._trajectory, self._model.action_dim, self._device,
                                              self._cfg.trajectory.randomize_first_state_tau)

    def _init_eval(self) -> None:
        self._eval_state = TrajectoryState(self._trajectory, self._model.action_dim, self._device, False)

    def _state_dict_collect(self) -> dict[str, Any]:
        return {**super()._state_dict_collect(), **self._collect_state.state_dict()}

    def _load_state_dict_collect(self, state: dict[str, Any]) -> None:
        super()._load_state_dict_collect(state)
        self._collect_state.load_state_dict(state)

    @torch.no_grad()
    def _forward_collect(self, obs: torch.Tensor, **kwargs: Any) -> dict[str, torch.Tensor]:
        state = self._collect_state
        state.ensure(obs.shape[0])
        stage = self._two_stage(obs, state.tau, self._switch_temperature.value)
        return self._follow(state, _sample_switch(stage.logits.softmax(-1)), stage.kept, stage.new)

    @torch.no_grad()
    def _random_action(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        state = self._collect_state
        state.ensure(obs.shape[0])
        action = torch.rand(obs.shape[0], self._model.action_dim, device=self._device) * 2.0 - 1.0
        switch = torch.rand(obs.shape[0], device=self._device) < 0.5
        kept, new = self._trajectory.advance(state.tau), self._trajectory.from_action(action, state.tau)
        return self._follow(state, switch, kept, new)

    @torch.no_grad()
    def _forward_eval(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        """Epsilon-greedy action and switch (eval.deterministic), else both sampled as collection samples them;
        every draw from the eval generator."""
        state, generator = self._eval_state, self._eval_generator
        state.ensure(obs.shape[0])
        if not self._cfg.eval.deterministic:
            stage = self._two_stage(obs, state.tau, self._switch_temperature.value, generator=generator)
            return self._follow(state, _sample_switch(stage.logits.softmax(-1), generator), stage.kept, stage.new)
        epsilon = self._cfg.eval.epsilon_greedy
        stage = self._two_stage(obs, state.tau, self._switch_temperature.value, epsilon=epsilon, generator=generator)
        explore = torch.rand(obs.shape[0], device=self._device, generator=generator) < epsilon
        greedy = stage.logits[:, 1] > stage.logits[:, 0]
        switch = torch.where(explore, _sample_switch(stage.logits.softmax(-1), generator), greedy)
        return self._follow(state, switch, stage.kept, stage.new)

    def export_actor(self, action_mask: bool = False) -> ActingNetwork:
        """The greedy action and switch (eval.deterministic with eval.epsilon_greedy 0): acting follows a
        trajectory, so the network takes the previous one and returns the new one beside the action."""
        if action_mask or self._max_repeat_steps:
            why = 'takes no action mask' if action_mask else 'forces switches by a step count (max_repeat_steps)'
            raise ConfigError(f"policy '{self._cfg.type}' cannot be exported: it {why}")
        size = self._trajectory.size
        return ActingNetwork(
            GreedyTrajectorySwitch(self._model, self._trajectory, float(self._switch_temperature.value),
                                   self._advantage_clip),
            input_names=('obs', 'prev_tau'), output_names=('action', 'tau'), eval_overrides={'epsilon_greedy': 0.0},
            note=f"{self._cfg.type} follows a trajectory: feed back output 'tau' [B, {size}, action_dim] as input "
                 f"'prev_tau' (zeros at an episode's start); greedy switches (eval.epsilon_greedy 0)")

    def _follow(self, state: TrajectoryState, switch: torch.Tensor, kept: torch.Tensor,
                new: torch.Tensor) -> dict[str, torch.Tensor]:
        """Advance each env's trajectory by the switch (forced after max_repeat_steps) and act on it."""
        if self._max_repeat_steps:
            switch = switch | (state.repeats >= self._max_repeat_steps)
        prev_tau = state.tau
        state.tau = select_trajectory(switch, new, kept)
        state.repeats = torch.where(switch, 1, state.repeats + 1)
        return {'action': state.tau[:, 0], 'prev_tau': prev_tau, 'tau': state.tau, 'switch': switch}

    def _process_transition(self, obs: Any, policy_output: dict[str, torch.Tensor],
                            timestep: Any) -> dict[str, Any]:
        transition = super()._process_transition(obs, policy_output, timestep)
        done = timestep.terminated.bool() | timestep.truncated.bool()
        transition.update(prev_tau=policy_output['prev_tau'], tau=policy_output['tau'],
                          switch=policy_output['switch'], step_type=step_type(timestep.first, done))
        return transition

    def _reset_collect(self, env_ids: Optional[Iterable[int]] = None) -> None:
        super()._reset_collect(env_ids)
        self._collect_state.reset(env_ids)

    def _reset_eval(self, env_ids: Optional[Iterable[int]] = None) -> None:
        self._eval_state.reset(env_ids)


def _sample_switch(probs: torch.Tensor, generator: Optional[torch.Generator] = None) -> torch.Tensor:
    """b ~ Categorical(probs) over (keep, new), as a bool per row: True means switch."""
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1).bool()


def _epsilon_greedy_action(mu: torch.Tensor, log_std: torch.Tensor, epsilon: float,
                           generator: Optional[torch.Generator] = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The most likely action tanh(mu), replaced by a sample with probability `epsilon` per row."""
    sampled, log_prob = tanh_gaussian_sample(mu, log_std, generator)
    if epsilon <= 0.0:
        return torch.tanh(mu), log_prob
    explore = torch.rand(mu.shape[0], 1, device=mu.device, generator=generator) < epsilon
    return torch.where(explore, sampled, torch.tanh(mu)), log_prob


@POLICY_REGISTRY.register('taac_l')
class TaacLPolicy(TAACPolicy):
    """TaacL: piecewise linear trajectories (action and slope)."""

    config = dict(
        type='taac_l',
        trajectory=dict(
            # (bool) A new trajectory starts at the sampled action, its slope inferred from the current
            # action; False: the sampled action is the new slope.
            inverse_mode=True,
        ),
    )
    trajectory_cls: type[Trajectory] = LinearTrajectory


@POLICY_REGISTRY.register('taac_q')
class TaacQPolicy(TaacLPolicy):
    """TaacQ: piecewise quadratic trajectories (action, slope and curvature)."""

    config = dict(
        type='taac_q',
        trajectory=dict(
            # (bool) A new trajectory starts at the sampled action (slope and curvature inferred); False:
            # the sampled action is the new curvature. Either way the slope restarts from zero.
            inverse_mode=True,
        ),
    )
    trajectory_cls = QuadraticTrajectory
