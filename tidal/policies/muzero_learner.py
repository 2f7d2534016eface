"""The MuZero representation learner: a MuZero model trained on unrolled replay, with reanalyze.

MuZero (arXiv 1911.08265) learns its model only from what the model predicts along replayed action
sequences: from the real observation at position p, unroll K steps of g with the actions taken, and
match f's value, policy and game-over, and g's reward, at every step. Value targets are n-step returns
bootstrapped from stored values; reanalyze (MuZero Unplugged, arXiv 2104.06294) recomputes a share of
them, and the policy targets, by searching again with a slowly updated target model, and EfficientZero's
dynamic horizon (arXiv 2111.00210) shortens the n of older samples.

The learner reads a `TrajectoryStore` with the columns `obs`, `action`, `reward`, `terminated`,
`truncated` and `bootstrap_value` (V of the final observation where an episode was truncated), and,
when the collector searched, `value` (the root value) and `policy` (the visit distribution). Without
a `value` column the target model predicts the values that targets bootstrap from.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional

import torch
from easydict import EasyDict

from tidal.base.errors import ConfigError
from tidal.base.modes import TrajectoryStore
from tidal.base.parts import Parts
from tidal.mcts import SearchConfig, search, visit_policy
from tidal.models.muzero import MuZeroModel, MuZeroOutput, MuZeroTargets
from tidal.models.target import TargetNetwork
from tidal.policies.common import UpdateCount, split_action_mask, stage_step
from tidal.policies.compiled import CompiledUpdate
from tidal.rl_utils.horizon import linear_td_steps
from tidal.rl_utils.unroll import scale_gradient, unrolled_value_targets


PRIORITY_EPS = 1e-6  # added to each priority: a sample the model already fits stays drawable


class RepresentationOptions:
    """The config of the representation learner and of its search, shared by the policies that use it."""

    config = dict(
        repr=dict(
            # (int >= 0) K: steps the dynamics function is unrolled along the replayed actions.
            num_unroll_steps=5,
            # (int >= 1 or int in {-1}) n of the n-step value targets; -1 looks ahead to the episode's end
            # (a Monte-Carlo return).
            td_steps=10,
            # (float in [0, 1]) Factor on the gradient that flows from each recurrent step into the steps
            # before it (MuZero appendix G).
            recurrent_gradient_scaling_factor=0.5,
            # (bool) Train g's reward prediction. False (as ALF) makes the value target at and after a terminated
            # episode's end its last reward, so that f's value still learns the terminal reward.
            train_reward_function=True,
            # (bool) Train f's game-over prediction (needs a model with a game-over head).
            train_game_over_function=True,
            # (bool) Also pull g's latents towards h's latents of the real observations.
            train_repr_prediction=False,
            # (bool) Train f's policy on the search's visit distribution (needed when the model searches).
            train_policy=True,
            # (float in [0, 1]) Share of each batch whose value and policy targets are recomputed by searching
            # again with the target model (reanalyze).
            reanalyze_ratio=0.0,
            # (int >= 1) n of the n-step value targets of reanalyzed samples.
            reanalyze_td_steps=5,
            # (int > 0 or None) Dynamic horizon: reanalyze n falls linearly from reanalyze_td_steps for fresh
            # samples to 1 for samples this many env steps old (EfficientZero); None keeps n fixed.
            reanalyze_max_bootstrap_age=None,
            # (int > 0 or None) Samples reanalyzed per search, to bound memory; None searches them all at once.
            reanalyze_batch_size=None,
            # (bool) Search every state of a reanalyzed window; False searches the K + 1 unrolled states and
            # takes the target model's value for the states the n-step returns bootstrap from beyond them.
            full_reanalyze=False,
            # (float in (0, 1]) Polyak factor of the target model's update.
            target_update_tau=1.0,
            # (int > 0) Update the target model every this many updates.
            target_update_period=200,
            # (bool) Unroll past an episode's end with uniform random actions; False repeats its last action.
            random_action_after_episode_end=False,
            # (float > 0) Adam learning rate of the model.
            learning_rate=1e-3,
            # (float >= 0) L2 weight decay of the model's parameters (Adam's weight_decay).
            weight_decay=1e-4,
            # (float > 0 or None) Clip the model's global gradient norm to this (None: no clipping).
            grad_clip_norm=10.0,
        ),
        search=dict(
            # (int >= 1) Simulations per search, for acting and for reanalyze.
            num_simulations=50,
            # (float > 0) c1 of pUCT: the exploration weight of a node with few visits.
            pb_c_init=1.25,
            # (float > 0) c2 of pUCT: visits at which the exploration weight starts to grow.
            pb_c_base=19652.0,
            # (float > 0) Concentration of the Dirichlet noise on the root prior while collecting.
            dirichlet_alpha=0.25,
            # (float in [0, 1]) Share of the root prior replaced by that noise.
            root_exploration_fraction=0.25,
            # (bool) Never expand a node the model predicts to be game over (game-over logit > 1, as ALF's MCTS): it
            # stays a leaf whose predicted value is backed up at every visit. Only for a model that learns game
            # over (repr.train_game_over_function); without it, nothing happens.
            stop_at_predicted_game_over=True,
        ),
    )


def search_config(cfg: EasyDict, discount: float) -> SearchConfig:
    return SearchConfig(num_simulations=cfg.num_simulations, discount=discount, pb_c_base=cfg.pb_c_base,
                        pb_c_init=cfg.pb_c_init, dirichlet_alpha=cfg.dirichlet_alpha,
                        root_exploration_fraction=cfg.root_exploration_fraction,
                        stop_at_predicted_game_over=cfg.stop_at_predicted_game_over)


def model_search_config(search_cfg: SearchConfig, opts: EasyDict) -> SearchConfig:
    """`search_cfg` as the model can serve it: game-over predictions stop the search only where the model learns
    them (an untrained, or absent, game-over head predicts nothing)."""
    return replace(search_cfg, stop_at_predicted_game_over=search_cfg.stop_at_predicted_game_over
                   and opts.train_game_over_function)


def check_repr_options(opts: EasyDict, model: MuZeroModel) -> None:
    if opts.train_game_over_function and model.game_over_head is None:
        raise ConfigError('policy.repr.train_game_over_function needs a model with a game-over head '
                          '(policy model game_over_head=True)')
    if model.continuous_actions:  # no policy target and no tree search over an action vector
        for key, on in (('train_policy', opts.train_policy), ('reanalyze_ratio', opts.reanalyze_ratio > 0),
                        ('random_action_after_episode_end', opts.random_action_after_episode_end)):
            if on:
                raise ConfigError(f'policy.repr.{key} needs discrete actions (a policy target, a tree search or '
                                  f'uniform random actions); this model takes continuous ones: turn it off')


def unroll(model: MuZeroModel, obs: torch.Tensor, action: torch.Tensor, gradient_scale: float) -> list[MuZeroOutput]:
    """h then g along `action` [B, K]: K + 1 outputs; each latent passes `gradient_scale` times its gradient
    back to the steps before it (MuZero appendix G), so the unroll's depth does not swamp h's gradient."""
    outputs = [model.initial_inference(obs)]
    latent = outputs[0].latent
    for k in range(action.shape[1]):
        output = model.recurrent_inference(latent, action[:, k])
        latent = scale_gradient(output.latent, gradient_scale)
        outputs.append(replace(output, latent=latent))
    return outputs


class RepresentationLearner:
    """Builds unrolled training batches (targets, reanalyze) from a trajectory buffer and trains the model.

    `make_batch` and `train` are separate so that a pipeline can build a batch where the replay lives
    and hand it to the learner that counts updates.
    """

    def __init__(self, model: MuZeroModel, opts: EasyDict, search_cfg: SearchConfig, device: torch.device,
                 seed: int, compiled: Optional[CompiledUpdate] = None) -> None:
        check_repr_options(opts, model)
        self.model, self.opts, self.device = model, opts, device
        self.compiled = compiled  # policy.learn.compile: the loss and the step compiled
        self.search_cfg = model_search_config(search_cfg, opts)
        # what the learner keeps, under its checkpoint keys; a policy includes them in its own parts
        self.parts = Parts()
        self.parts.network('model', model)
        self.target = self.parts.target('target', TargetNetwork(model))
        self.optimizer = self.parts.optimizer('optimizer', torch.optim.Adam(
            model.parameters(), lr=opts.learning_rate, weight_decay=opts.weight_decay))
        self._updates = self.parts.counter('updates', UpdateCount(as_int=True))
        # which samples to reanalyze, random actions past episode ends
        self.generator = self.parts.stream('generator', torch.Generator())
        self.generator.manual_seed(seed)

    @property
    def updates(self) -> int:
        """Gradient steps made so far."""
        return self._updates.value

    # ----- targets ---------------------------------------------------------------------------
    @torch.no_grad()
    def make_batch(self, buffer: TrajectoryStore, env_ids: torch.Tensor, positions: torch.Tensor) -> dict[str, Any]:
        """The inputs and targets of one update for the samples starting at (env_ids, positions) [B]."""
        opts, K = self.opts, self.opts.num_unroll_steps
        env_ids, positions = env_ids.to(buffer.device), positions.to(buffer.device)
        batch_size = env_ids.shape[0]
        last = positions + buffer.steps_to_episode_end(env_ids, positions)  # the episode's last stored row
        flags = buffer.get(env_ids, last, ['terminated', 'truncated', 'bootstrap_value'])
        complete = flags['terminated'] | flags['truncated']
        end = last - positions + complete.long()  # index of the window's end state (module docs of rl_utils.unroll)
        reanalyzed = self._reanalyze_choice(batch_size, buffer.device)
        td = torch.full((batch_size, K + 1), opts.td_steps, dtype=torch.long, device=buffer.device)
        if reanalyzed.any():
            td[reanalyzed] = self._reanalyze_td_steps(buffer, env_ids[reanalyzed], positions[reanalyzed])
        lookahead = int(end.max()) if (td < 0).any() else int(td.max())
        width = max(K, K + lookahead)
        offsets = torch.arange(width + 1, device=buffer.device)
        rows = torch.minimum(positions[:, None] + offsets, last[:, None])  # [B, W + 1], capped at the episode
        has_row = positions[:, None] + offsets <= last[:, None]
        keys = ['reward', 'action'] + (['policy'] if 'policy' in buffer.columns and opts.train_policy else [])
        data = buffer.get(env_ids[:, None], rows, keys)
        reward = torch.where(offsets[:width] < end[:, None], data['reward'][:, :width].float(), 0.0)

        # values that the n-step targets bootstrap from: stored or predicted, the end state's, reanalyzed
        state = torch.arange(K + 1, device=buffer.device).expand(batch_size, K + 1).minimum(end[:, None])
        remaining = end[:, None] - state
        stop = state + torch.where(td < 0, remaining, td.minimum(remaining))  # [B, K + 1]
        stop_rows = rows.gather(1, stop)
        stop_value = self._stored_values(buffer, env_ids[:, None].expand_as(stop_rows), stop_rows)
        policy = data['policy'][:, :K + 1].float() if 'policy' in data else None
        if reanalyzed.any():
            fresh_value, fresh_policy = self._reanalyze(buffer, env_ids[reanalyzed], rows[reanalyzed],
                                                        stop[reanalyzed], K)
            stop_value[reanalyzed] = fresh_value
            if opts.train_policy:
                policy = policy if policy is not None else fresh_policy.new_zeros(
                    (batch_size, *fresh_policy.shape[1:]))
                policy[reanalyzed] = fresh_policy
        end_value = torch.where(flags['terminated'], 0.0, flags['bootstrap_value'].float())
        at_end = complete[:, None] & (stop == end[:, None])
        stop_value = torch.where(at_end, end_value[:, None], stop_value)
        value = reward.new_zeros(batch_size, width + 1).scatter(1, stop, stop_value)
        value_target = unrolled_value_targets(reward, value, end, td, self.search_cfg.discount, K + 1)
        step = offsets[:K + 1]
        game_over = flags['terminated'][:, None] & (step >= end[:, None])
        if not opts.train_reward_function:  # as ALF: without a reward head, the value at game over is the last reward
            last_reward = buffer.get(env_ids, last, ['reward'])['reward'].float()
            value_target = torch.where(game_over, last_reward[:, None], value_target)

        reward_target = torch.where((step >= 1) & (step <= end[:, None]),
                                    torch.cat([reward.new_zeros(batch_size, 1), reward[:, :K]], dim=1), 0.0)
        beyond = ~has_row[:, :K + 1]  # no observation (and no search) there: no policy or latent target
        action = self._unroll_actions(data['action'][:, :K], has_row[:, :K])
        batch = {
            'obs': buffer.get(env_ids, positions, ['obs'])['obs'],
            'action': action, 'target_value': value_target, 'target_reward': reward_target,
            'game_over': game_over, 'beyond_episode_end': beyond,
        }
        if policy is not None:
            batch['target_policy'] = policy
        if opts.train_repr_prediction:
            batch['next_obs'] = buffer.get(env_ids[:, None], rows[:, 1:K + 1], ['obs'])['obs']
        return batch

    def _reanalyze_choice(self, batch_size: int, device: torch.device) -> torch.Tensor:
        """Exactly round(reanalyze_ratio * B) samples, chosen at random, are reanalyzed."""
        count = int(round(self.opts.reanalyze_ratio * batch_size))
        chosen = torch.zeros(batch_size, dtype=torch.bool)
        chosen[torch.randperm(batch_size, generator=self.generator)[:count]] = True
        return chosen.to(device)

    def _reanalyze_td_steps(self, buffer: TrajectoryStore, env_ids: torch.Tensor, positions: torch.Tensor
                            ) -> torch.Tensor:
        """n per unrolled state [B', K + 1]: fixed, or shrinking with the sample's age in env steps."""
        opts, K = self.opts, self.opts.num_unroll_steps
        n = torch.full((env_ids.shape[0], K + 1), opts.reanalyze_td_steps, dtype=torch.long, device=buffer.device)
        if opts.reanalyze_max_bootstrap_age is None:
            return n
        newest = buffer.current_position().to(buffer.device)[env_ids]
        age = (newest[:, None] - positions[:, None] - torch.arange(K + 1, device=buffer.device)) * buffer.num_envs
        return linear_td_steps(age.clamp(min=0), opts.reanalyze_td_steps, opts.reanalyze_max_bootstrap_age)

    def _stored_values(self, buffer: TrajectoryStore, env_ids: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """Values of the states at `rows`: the collector's root values, or the target model's prediction."""
        if 'value' in buffer.columns:
            return buffer.get(env_ids, rows, ['value'])['value'].float()
        return self._model_values(buffer, env_ids, rows)

    def _reanalyze(self, buffer: TrajectoryStore, env_ids: torch.Tensor, rows: torch.Tensor, stop: torch.Tensor,
                   num_unroll: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(values at `stop` [B', K + 1], visit policies [B', K + 1, A]) by searching with the target model.

        The K + 1 unrolled states (all window states with full_reanalyze) are searched; states beyond them
        that a target bootstraps from get the target model's value.
        """
        searched = rows.shape[1] if self.opts.full_reanalyze else num_unroll + 1
        chunk = self.opts.reanalyze_batch_size or env_ids.shape[0]
        values, policies = [], []
        for first in range(0, env_ids.shape[0], chunk):
            part = slice(first, first + chunk)
            value, policy = self._search_rows(buffer, env_ids[part], rows[part, :searched])
            if searched < rows.shape[1]:
                rest = self._model_values(buffer, env_ids[part], rows[part, searched:])
                value = torch.cat([value, rest], dim=1)
            values.append(value)
            policies.append(policy[:, :num_unroll + 1])
        return torch.cat(values).gather(1, stop), torch.cat(policies)

    def _search_rows(self, buffer: TrajectoryStore, env_ids: torch.Tensor, rows: torch.Tensor
                     ) -> tuple[torch.Tensor, torch.Tensor]:
        """Root values [B', S] and visit distributions [B', S, A] of the observations at `rows` [B', S]."""
        obs = buffer.get(env_ids[:, None].expand_as(rows).reshape(-1), rows.reshape(-1), ['obs'])['obs']
        observation, mask = split_action_mask(obs)
        output = self.target.initial_inference(observation.to(self.device))
        result = search(output.latent, output.policy_logits, self.target.value(output), self.target.recurrent_fn,
                        self.search_cfg, legal_mask=mask, add_noise=True, generator=self.generator)
        policy = visit_policy(result.visit_counts, 1.0)
        return (result.root_value.reshape(rows.shape).to(rows.device),
                policy.reshape(*rows.shape, -1).to(rows.device))

    def _model_values(self, buffer: TrajectoryStore, env_ids: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """The target model's values [B', S] of the observations at `rows` [B', S] (env_ids [B'] or [B', S])."""
        env_ids = env_ids if env_ids.dim() == 2 else env_ids[:, None]
        obs = buffer.get(env_ids.expand_as(rows).reshape(-1), rows.reshape(-1), ['obs'])['obs']
        observation, _ = split_action_mask(obs)
        value = self.target.value(self.target.initial_inference(observation.to(self.device)))
        return value.reshape(rows.shape).to(rows.device)

    def _unroll_actions(self, action: torch.Tensor, has_row: torch.Tensor) -> torch.Tensor:
        """The replayed actions [B, K] ([B, K, A] if continuous); past the episode's end random ones, or its last
        action repeated (continuous actions always repeat it)."""
        action = action if self.model.continuous_actions else action.long()
        if bool(has_row.all()):
            return action
        if self.opts.random_action_after_episode_end:
            random = torch.randint(self.model.action_dim, action.shape, generator=self.generator).to(action.device)
            return torch.where(has_row, action, random)
        last_index = (has_row.long().sum(dim=1, keepdim=True) - 1).clamp(min=0)
        if action.dim() == 3:  # continuous: each step's whole action vector
            has_row, last_index = has_row[..., None], last_index[..., None].expand(-1, -1, action.shape[2])
        return torch.where(has_row, action, action.gather(1, last_index))

    # ----- update ----------------------------------------------------------------------------
    def train(self, batch: dict[str, Any], weight: Optional[torch.Tensor] = None) -> dict[str, torch.Tensor]:
        """One gradient step on MuZero's loss (eq. 1); returns the loss terms and a 'priority' per sample."""
        opts = self.opts
        if self.compiled is not None:
            self.compiled.begin()
        losses = self._losses if self.compiled is None else self.compiled.function('muzero', self._losses)
        terms, priority = losses(batch, weight)
        grad_norm = stage_step(self.optimizer, terms['loss'], opts.grad_clip_norm, True, self.compiled)
        assert grad_norm is not None  # always measured
        self._updates.value += 1
        if self._updates.value % opts.target_update_period == 0:
            self.target.update(opts.target_update_tau)
        info = {f'{name}_loss': term.detach().mean() for name, term in terms.items() if name != 'loss'}
        info.update(total_loss=terms['loss'].detach(), grad_norm=grad_norm.detach(), priority=priority)
        return info

    def _losses(self, batch: dict[str, Any], weight: Optional[torch.Tensor]
                ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """MuZero's loss terms on `batch` (eq. 1; 'loss' their weighted sum) and each sample's priority."""
        opts = self.opts
        observation, _ = split_action_mask(batch['obs'])  # the search used the mask; the model reads the rest
        outputs = unroll(self.model, observation, batch['action'], opts.recurrent_gradient_scaling_factor)
        policy = batch.get('target_policy')
        if policy is None:
            policy = outputs[0].policy_logits.new_zeros(*batch['target_value'].shape, self.model.action_dim)
        targets = MuZeroTargets(value=batch['target_value'], reward=batch['target_reward'], policy=policy,
                                game_over=batch['game_over'], beyond_episode_end=batch['beyond_episode_end'],
                                latent=self._latent_targets(batch, outputs[0].latent))
        terms = self.model.calc_loss(outputs, targets, train_reward=opts.train_reward_function,
                                     train_policy=opts.train_policy, train_game_over=opts.train_game_over_function,
                                     train_repr_prediction=opts.train_repr_prediction, weight=weight)
        with torch.no_grad():  # the value error summed over the unroll: all K + 1 steps, as the value loss has them
            priority = self.model.value_error(outputs, batch['target_value']).sum(dim=1) + PRIORITY_EPS
        return terms, priority

    @torch.no_grad()
    def _latent_targets(self, batch: dict[str, Any], first: torch.Tensor) -> Optional[torch.Tensor]:
        """h of the real observations along the unroll [B, K + 1, latent], step 0 the root's own latent."""
        if not self.opts.train_repr_prediction:
            return None
        next_obs = batch['next_obs']
        observation, _ = split_action_mask(next_obs)
        shape = observation.shape[:2]
        latent = self.model.represent(observation.reshape(-1, *observation.shape[2:]))
        return torch.cat([first.detach()[:, None], latent.reshape(*shape, -1)], dim=1)

    def monitor_vars(self) -> list[str]:
        opts = self.opts
        names = ['total_loss', 'value_loss', 'grad_norm']
        names += ['reward_loss'] if opts.train_reward_function else []
        names += ['policy_loss'] if opts.train_policy else []
        names += ['game_over_loss'] if opts.train_game_over_function else []
        names += ['latent_loss'] if opts.train_repr_prediction else []
        return names

    def state_dict(self) -> dict[str, Any]:
        return self.parts.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.parts.load_state_dict(state)
