"""MuZero: acting by tree search in a learned model (Schrittwieser et al. 2019, arXiv 1911.08265).

Each step the collector's observations are encoded by h, searched by MCTS through g and f (appendix
B), and the action is drawn from the root's visit counts at a temperature that falls with the env
steps seen (appendix D); evaluation takes the most visited action of a search without noise. The
model learns from unrolled replay through the representation learner (`muzero_learner`), which can
also reanalyze old data with its target model. Observations may be a dict with 'observation' and
'action_mask' (1 = legal); the search then never expands an illegal root action.
"""
from __future__ import annotations

import bisect
from typing import Any, Iterable, Mapping, Optional

import torch
import torch.nn as nn

from tidal.base.errors import ConfigError
from tidal.mcts import search, visit_policy
from tidal.models.acting import ActingNetwork, MuZeroNetworks
from tidal.models.muzero import MuZeroModel
from tidal.policies.base import MODES, Policy
from tidal.policies.common import split_action_mask
from tidal.base.modes import EnvLayout, Timestep, TrajectoryStore, UnrollView
from tidal.policies.muzero_learner import (RepresentationLearner, RepresentationOptions, model_search_config,
                                           search_config)
from tidal.registry import POLICY_REGISTRY
from tidal.base.nest import tree_map


@POLICY_REGISTRY.register('muzero')
class MuZeroPolicy(RepresentationOptions, Policy):
    config = dict(
        type='muzero',
        # (bool) Sample replay in proportion to priority ** alpha, a sample's value error: |predicted - target value|
        # summed over its K + 1 unrolled states.
        priority=True,
        learn=dict(
            # (int in [1, 100_000]) Updates after each call of the collector.
            update_per_collect=4,
            # (int > 0) Unrolled samples per update.
            batch_size=256,
        ),
        collect=dict(
            # (int > 0) Env steps per call of the collector, summed over the collector envs.
            n_sample=64,
            # (float in [0, 1]) Discount of rewards, in the search and in the value targets.
            discount_factor=0.997,
            # (list[float >= 0]) Temperatures of the visit-count policy while collecting (appendix D): the first
            # until collect.temperature_env_steps[0] env steps, and so on.
            temperatures=[1.0, 0.5, 0.25],
            # (list[int > 0]) Env steps at which the next temperature takes over (one fewer than temperatures).
            temperature_env_steps=[10_000, 20_000],
        ),
        other=dict(
            replay_buffer=dict(
                # (float in [0, 1]) Prioritized replay exponent (0 = uniform).
                alpha=1.0,
                # (float in [0, 1]) Importance-sampling exponent (0 = no correction, as in the reference).
                beta=0.0,
            ),
        ),
    )
    action_space = 'discrete'
    pipeline = 'unroll'
    remote_collect = False  # its temperature schedule counts the run's env steps in the collect mode

    @classmethod
    def default_model(cls, cfg: Mapping[str, Any]) -> tuple[str, list[str]]:
        return 'muzero', ['tidal.models.muzero']

    def __init__(self, cfg: dict, model: Optional[nn.Module] = None, enable_field: Iterable[str] = MODES) -> None:
        collect = cfg['collect']
        if len(collect.temperature_env_steps) != len(collect.temperatures) - 1:
            raise ConfigError(f'policy.collect.temperature_env_steps needs one entry fewer than '
                              f'policy.collect.temperatures ({len(collect.temperatures)}), got '
                              f'{len(collect.temperature_env_steps)}')
        if list(collect.temperature_env_steps) != sorted(collect.temperature_env_steps):
            raise ConfigError('policy.collect.temperature_env_steps must be increasing')
        self._search_cfg = model_search_config(search_config(cfg['search'], collect.discount_factor), cfg['repr'])
        self._env_step = 0
        super().__init__(cfg, model, enable_field)

    @property
    def model(self) -> MuZeroModel:
        return self._model

    # ----- learn mode ------------------------------------------------------------------------
    def _init_learn(self) -> None:
        # seeded from torch's generator, which the run seeds: the same run reanalyzes the same samples
        seed = int(torch.randint(2**62, ()))
        self._learner = RepresentationLearner(self._model, self._cfg.repr, self._search_cfg, self._device, seed,
                                              self._compiled)
        self.parts.include(self._learner.parts, leave_out=('model',))  # the model: this policy's acting network

    def make_unroll_batch(self, buffer: TrajectoryStore, env_ids: torch.Tensor, positions: torch.Tensor
                          ) -> dict[str, Any]:
        """The batch of one update from replay (the unroll pipeline calls this where the replay lives)."""
        return self._learner.make_batch(buffer, env_ids, positions)

    def extra_views(self) -> dict[str, Any]:
        return {'unroll': UnrollView(make_batch=self.make_unroll_batch)}

    def _forward_learn(self, batch: dict[str, Any]) -> dict[str, Any]:
        return self._learner.train(batch, weight=batch.get('weight') if self._cfg.priority_IS_weight else None)

    def _monitor_vars_learn(self) -> list[str]:
        return self._learner.monitor_vars()

    # ----- collect mode ----------------------------------------------------------------------
    def temperature(self, env_step: int) -> float:
        """The visit-count temperature in force after `env_step` env steps."""
        collect = self._cfg.collect
        return float(collect.temperatures[bisect.bisect_right(collect.temperature_env_steps, env_step)])

    @torch.no_grad()
    def _search(self, obs: Any, add_noise: bool) -> tuple[Any, torch.Tensor, torch.Tensor]:
        """(observation, root visit counts [B, A], root value [B]) of one batched search."""
        observation, mask = split_action_mask(obs)
        output = self._model.initial_inference(observation)
        result = search(output.latent, output.policy_logits, self._model.value(output), self._model.recurrent_fn,
                        self._search_cfg, legal_mask=None if mask is None else mask.bool(), add_noise=add_noise)
        return observation, result.visit_counts, result.root_value

    def _forward_collect(self, obs: Any, **kwargs: Any) -> dict[str, Any]:
        _, visits, root_value = self._search(obs, add_noise=True)
        probs = visit_policy(visits, self.temperature(self._env_step))
        action = torch.multinomial(probs, 1).squeeze(1)
        return {'action': action, 'value': root_value, 'policy': visit_policy(visits, 1.0)}

    def _random_action(self, obs: Any) -> dict[str, Any]:
        observation, mask = split_action_mask(obs)
        batch = observation.shape[0]
        legal = torch.ones(batch, self._model.action_dim, device=self._device) if mask is None else mask.float()
        policy = legal / legal.sum(dim=1, keepdim=True)
        return {'action': torch.multinomial(policy, 1).squeeze(1), 'value': torch.zeros(batch, device=self._device),
                'policy': policy}

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Timestep) -> dict[str, Any]:
        self._env_step += int(timestep.reward.shape[0])
        bootstrap_value = torch.zeros_like(policy_output['value'])
        cut = timestep.truncated
        if bool(cut.any()):  # V(final obs) where an episode was cut off: its value target bootstraps from it
            final = tree_map(lambda x: x[cut], timestep.next_obs)
            with torch.no_grad():
                bootstrap_value[cut] = self._model.value(self._model.initial_inference(split_action_mask(final)[0]))
        return {
            'obs': obs, 'action': policy_output['action'], 'reward': timestep.reward.to(torch.float32),
            'terminated': timestep.terminated, 'truncated': timestep.truncated,
            'value': policy_output['value'], 'policy': policy_output['policy'], 'bootstrap_value': bootstrap_value,
        }

    def _get_train_sample(self, transitions: dict[str, Any], layout: EnvLayout) -> dict[str, Any]:
        return transitions

    def _state_dict_collect(self) -> dict[str, Any]:
        return {'env_step': torch.tensor(self._env_step)}

    def _load_state_dict_collect(self, state: dict[str, Any]) -> None:
        self._env_step = int(state.get('env_step', 0))

    # ----- eval mode -------------------------------------------------------------------------
    def _forward_eval(self, obs: Any) -> dict[str, Any]:
        """The most visited action of a search without root noise (eval.deterministic), else one drawn from its
        visit counts at temperature 1: the search policy that f learns, and that collection samples from at its
        first temperature (a later one depends on the run's env steps, not on the weights alone)."""
        _, visits, _ = self._search(obs, add_noise=False)
        if self._cfg.eval.deterministic:
            return {'action': visit_policy(visits, 0.0).argmax(dim=1)}
        return {'action': torch.multinomial(visit_policy(visits, 1.0), 1, generator=self._eval_generator).squeeze(1)}

    def export_actor(self, action_mask: bool = False) -> ActingNetwork:
        """MuZero acts by tree search, which no forward pass is: its networks h, f and g instead (the action mask
        is the search's business, not theirs), checked against the model's own inference."""
        model = self._model

        @torch.no_grad()
        def parity(obs: torch.Tensor) -> tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]:
            latent = model.represent(obs)
            action = torch.arange(obs.shape[0], device=obs.device) % model.action_dim
            prediction, step = model.initial_inference(obs), model.recurrent_inference(latent, action)
            expected = (latent, prediction.policy_logits, model.value(prediction), step.latent, model.reward(step))
            return (obs, latent, action), expected

        return ActingNetwork(MuZeroNetworks(model), input_names=('obs', 'latent', 'action'),
                             output_names=('representation', 'policy_logits', 'value', 'next_latent', 'reward'),
                             note='muzero acts by tree search; exported its networks, not a policy',
                             is_policy=False, parity=parity)
