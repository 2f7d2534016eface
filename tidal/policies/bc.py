"""Behaviour cloning: supervised learning of the dataset's actions, the baseline every offline method is measured
against (Pomerleau 1991; CORL's `bc` for the D4RL numbers).

Continuous actions: a deterministic tanh actor regressed on the actions by mean squared error. Discrete actions
(`continuous=False`, DI-engine's `bc` key): logits over the actions fitted by cross-entropy, acting greedily.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

import torch
import torch.nn.functional as F

from tidal.base.errors import ConfigError, TidalError
from tidal.base.modes import ActingSteps, as_given, no_draw
from tidal.base.stages import LearnPlan, LossStage
from tidal.models.acting import ActingNetwork, MaskedArgmax
from tidal.policies.base import Policy
from tidal.policies.common import adam, split_action_mask
from tidal.policies.offline_common import DatasetLearning
from tidal.registry import POLICY_REGISTRY
from tidal.rl_utils import masked_logits


class Cloning(Policy):
    """The learning and acting of behaviour cloning; `BCPolicy` adds the dataset."""

    config = dict(
        # (bool) Continuous actions (a deterministic tanh actor, squared error); False: discrete actions (logits,
        # cross-entropy).
        continuous=True,
        learn=dict(
            # (float > 0) Learning rate.
            learning_rate=3e-4,
            # (str) 'adam' (AdamW where weight_decay > 0), or 'sgd' with `momentum` (DI-engine's BC default).
            optimizer='adam',
            # (float >= 0) Momentum of 'sgd'.
            momentum=0.0,
            # (float >= 0) Decoupled weight decay (AdamW) for 'adam'; L2 weight decay for 'sgd'.
            weight_decay=0.0,
        ),
    )

    @classmethod
    def action_space_of(cls, cfg: Mapping[str, Any]) -> Optional[str]:
        return 'continuous' if cfg.get('continuous', True) else 'discrete'

    @classmethod
    def default_model(cls, cfg: Mapping[str, Any]) -> tuple[str, list[str]]:
        if cfg.get('continuous', True):
            return 'deterministic_actor', ['tidal.models.qac']
        return 'dqn', ['tidal.models.q_network']

    def _init_learn(self) -> None:
        self._optimizer = self.parts.optimizer('optimizer', self._make_optimizer())

    def _make_optimizer(self) -> torch.optim.Optimizer:
        learn = self._cfg.learn
        if learn.optimizer == 'sgd':
            return torch.optim.SGD(self._model.parameters(), lr=learn.learning_rate, momentum=learn.momentum,
                                   weight_decay=learn.weight_decay)
        if learn.optimizer != 'adam':
            raise ConfigError(f"policy.learn.optimizer is {learn.optimizer!r}: 'adam' or 'sgd'")
        if learn.weight_decay > 0:
            return torch.optim.AdamW(self._model.parameters(), lr=learn.learning_rate, weight_decay=learn.weight_decay)
        return adam(self._model.parameters(), learn.learning_rate)

    def _learn_plan(self, batch: dict[str, Any]) -> LearnPlan:
        return LearnPlan([LossStage(self._optimizer, self._loss, None, loss_key=None, norm_key=None)])

    def _loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Squared error of the actor's action, or cross-entropy of the logits, against the dataset's action."""
        if self._cfg.continuous:
            loss = (self._model.actor(batch['obs']) - batch['action']).pow(2).mean()
        else:
            observation, _ = split_action_mask(batch['obs'])
            loss = F.cross_entropy(self._model(observation), batch['action'].long())
        return loss, {'bc_loss': loss.detach()}

    def _monitor_vars_learn(self) -> list[str]:
        return ['bc_loss']

    def _forward_collect(self, obs: Any, **kwargs: Any) -> dict[str, torch.Tensor]:
        return self._acting('collect').forward(obs)

    def _forward_eval(self, obs: Any) -> dict[str, torch.Tensor]:
        return self._acting('eval').forward(obs)

    def _acting_steps(self, mode: str) -> Optional[ActingSteps]:
        return self._acting(mode)

    def _acting(self, mode: str) -> ActingSteps:
        """The cloned action in every mode: the actor's, or the allowed action of the largest logit."""
        if self._cfg.continuous:
            return ActingSteps(as_given, no_draw, _act_actor, self._model)
        return ActingSteps(split_action_mask, no_draw, _act_argmax, self._model)

    def export_actor(self, action_mask: bool = False) -> ActingNetwork:
        if not self._cfg.continuous:
            return ActingNetwork(MaskedArgmax(self._model), input_names=('obs', 'action_mask') if action_mask else ('obs',))
        if action_mask:
            raise TidalError(f"policy '{self._cfg.type}' acts on continuous actions and takes no action mask")
        return ActingNetwork(self._model.actor_network())


@POLICY_REGISTRY.register('bc')
class BCPolicy(DatasetLearning, Cloning):
    config = dict(type='bc', collect=dict(normalize_states=True))


# the acting steps (`ActingSteps`): module-level, so that they read nothing but the model
@torch.no_grad()
def _act_actor(model: Any, obs: Any, noise: None) -> dict[str, torch.Tensor]:
    return {'action': model.actor(obs)}


@torch.no_grad()
def _act_argmax(model: Any, inputs: tuple[Any, Optional[torch.Tensor]], noise: None) -> dict[str, torch.Tensor]:
    observation, mask = inputs
    return {'action': masked_logits(model(observation), mask).argmax(dim=-1)}
