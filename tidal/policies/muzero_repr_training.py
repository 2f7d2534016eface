"""muzero_repr's MuZero model, trained beside the policy that acts on its latent: the steps set aside for its
replay, and its training.

The model learns from MuZero's losses (`RepresentationLearner`) on a replay and a schedule that the 'repr' feed
keeps; with `repr.encoder_grad` its h also takes a step on the gradient that the held policy's update leaves on
the latent. Each model update's values are reported with the held policy's next learn update, which the finite
guard and the logs see.
"""
from __future__ import annotations

from typing import Any, Optional

import torch
from easydict import EasyDict

from tidal.base.modes import ModelUpdates, Timestep, TrajectoryStore
from tidal.mcts import SearchConfig
from tidal.models.muzero import MuZeroModel
from tidal.policies.common import adam, optimizer_step, split_action_mask
from tidal.policies.compiled import CompiledUpdate
from tidal.policies.muzero_learner import RepresentationLearner


class ModelSteps:
    """The raw steps collected for the model's replay, set aside until the 'repr' feed takes them."""

    def __init__(self, model: MuZeroModel) -> None:
        self._model = model
        self._steps: list[dict[str, Any]] = []

    def columns(self, timestep: Timestep) -> dict[str, torch.Tensor]:
        """What the model's replay needs beside the held policy's columns of a step: the env's reward, which the held
        policy may scale, and V(final obs) where an episode was cut off (`set_aside` takes them out again)."""
        return {'repr_reward': timestep.reward.to(torch.float32),
                'repr_bootstrap_value': self._truncation_values(timestep)}

    @torch.no_grad()
    def _truncation_values(self, timestep: Timestep) -> torch.Tensor:
        """The model's V(final obs) [N] where an episode was truncated, else 0."""
        value = torch.zeros(timestep.reward.shape[0], device=timestep.reward.device)
        cut = timestep.truncated
        if bool(cut.any()):
            final, _ = split_action_mask(timestep.next_obs)
            value[cut] = self._model.value(self._model.initial_inference(final[cut]))
        return value

    def set_aside(self, transitions: dict[str, Any]) -> None:
        """Keep a collection's raw steps for the model's replay, taking `columns`' entries out of `transitions`."""
        self._steps.append({
            'obs': transitions['obs'], 'action': transitions['action'], 'reward': transitions.pop('repr_reward'),
            'terminated': transitions['terminated'], 'truncated': transitions['truncated'],
            'bootstrap_value': transitions.pop('repr_bootstrap_value'),
        })

    def take(self) -> list[dict[str, Any]]:
        """The steps set aside since the last call (the 'repr' view's `collected`)."""
        taken, self._steps = self._steps, []
        return taken


class ReprTraining:
    """The MuZero model's learner, h's optimizer on the held policy's gradient (None without repr.encoder_grad),
    the feed's schedule of model updates and the values of those not yet reported."""

    def __init__(self, model: MuZeroModel, repr_cfg: EasyDict, search_cfg: SearchConfig, device: torch.device,
                 seed: int, compiled: Optional[CompiledUpdate]) -> None:
        self.learner = RepresentationLearner(model, repr_cfg, search_cfg, device, seed, compiled)
        self.encoder_optimizer = (adam(model.representation.parameters(), repr_cfg.learning_rate)
                                  if repr_cfg.encoder_grad else None)
        self._device = device
        self._learn_calls = 0  # the held policy's learn updates: the clock of interval_unit='learn_update'
        self._model_updates: Optional[ModelUpdates] = None  # the feed's, once it schedules them
        # the values of the latest model updates (their mean), reported with every learn update: the finite guard
        # and the logs fix their keys at the first update, which comes before the model's first one (0 until then)
        self._info = {name: torch.zeros((), device=device) for name in self.monitor_vars()}
        # the values of the model updates made since the last learn update: those of this one's schedule, or
        # those the feed made after its last step (repr.training.interval_unit='train_iter')
        self._unreported: list[dict[str, torch.Tensor]] = []

    def monitor_vars(self) -> list[str]:
        """The model's values as a learn update reports them."""
        return [f'repr_{name}' for name in self.learner.monitor_vars()]

    def step_encoder(self, latent: torch.Tensor, leaf: torch.Tensor) -> None:
        """h's step on the gradient that the held policy's update left on `leaf`, the copy of `latent` it saw (summed
        over all its backward passes: SAC's critic and actor losses)."""
        if self.encoder_optimizer is not None and leaf.grad is not None:
            optimizer_step(self.encoder_optimizer, latent, leaf.grad)

    def after_learn_update(self, info: dict[str, Any]) -> None:
        """Make the model updates that the feed's schedule makes due now (interval_unit='learn_update'; with
        'train_iter' the feed makes them after its step), then add to `info` the values of those made since the
        last learn update."""
        self._learn_calls += 1
        if self._model_updates is not None:
            self._model_updates(self._learn_calls)
        if self._unreported:
            self._info = {f'repr_{name}': torch.stack([each[name] for each in self._unreported]).mean()
                          for name in self.learner.monitor_vars()}
            self._unreported = []
        info.update(self._info)

    def schedule(self, updates: ModelUpdates) -> None:
        self._model_updates = updates

    def make_batch(self, store: TrajectoryStore, env_ids: torch.Tensor, positions: torch.Tensor) -> dict[str, Any]:
        """The model's batch (targets, reanalyze) for the unrolls from the sampled starts of its replay."""
        batch = self.learner.make_batch(store, env_ids, positions)
        batch['obs'] = split_action_mask(batch['obs'])[0]
        return batch

    def train(self, batch: dict[str, Any], weight: Optional[torch.Tensor]) -> dict[str, torch.Tensor]:
        """One update of MuZero's loss; its loss terms and a 'priority' per sample. Its monitored values are
        reported with the next learn update."""
        info = self.learner.train(batch, weight=weight)
        self._unreported.append({name: info[name] for name in self.learner.monitor_vars()})
        return info

    def optimizers(self) -> list[torch.optim.Optimizer]:
        return [self.learner.optimizer, *([] if self.encoder_optimizer is None else [self.encoder_optimizer])]

    def state_dict(self) -> dict[str, Any]:
        """The entries that the policy's learn state adds to the held policy's (their keys are the checkpoint's)."""
        state = {
            'repr': self.learner.state_dict(), 'repr_learn_calls': self._learn_calls,
            'repr_info': {name: value.detach().cpu() for name, value in self._info.items()},
            'repr_unreported': [{name: value.cpu() for name, value in each.items()} for each in self._unreported],
        }
        if self.encoder_optimizer is not None:
            state['encoder_optimizer'] = self.encoder_optimizer.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.learner.load_state_dict(state['repr'])
        self._learn_calls = int(state['repr_learn_calls'])
        self._info = {name: value.to(self._device) for name, value in state['repr_info'].items()}
        self._unreported = [{name: value.to(self._device) for name, value in each.items()}
                            for each in state['repr_unreported']]
        if self.encoder_optimizer is not None:
            self.encoder_optimizer.load_state_dict(state['encoder_optimizer'])
