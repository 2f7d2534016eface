"""The weights of a seed group stacked along a leading seed dimension, and the update of all seeds at once.

Each seed keeps its own policy object: its modules, optimizers and optimizer states stay where they are,
but their tensors become views into stacked tensors [S, ...], so acting, evaluation and checkpoints of a
seed read its own slice while an update writes all slices together. An update is the policy's
`LearnPlan`: each loss stage runs once for all seeds, `torch.func.vmap` over the seed dimension of the
weights and of the batches, so the loss is the policy's own single-seed function (its means, its
advantage normalisation are per seed), and one backward pass of the seeds' summed losses gives each seed its own
gradient. Gradients are clipped per seed; the optimizer of a stage steps
the stacked tensors with the hyperparameters of seed 0's (the seeds share a config and a schedule), and
element-wise optimizers (Adam, SGD) then make exactly each seed's own step.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import torch
import torch.nn as nn
from torch.func import functional_call, vmap

from tidal.base.errors import ConfigError
from tidal.base.policy import PolicyLike
from tidal.base.stages import LearnPlan, LossFn
from tidal.models.batch_renorm import BatchRenorm

CLIP_EPS = 1e-6  # as torch.nn.utils.clip_grad_norm_
SHARED_STATE = ('step',)  # optimizer state entries that count steps: one for all seeds


#: layers whose training forward a vmapped update cannot run: what each does that it cannot
UNSTACKABLE_LAYERS: dict[type, str] = {
    nn.modules.batchnorm._BatchNorm: 'it updates its running statistics in place while learning',
    BatchRenorm: 'it updates its running statistics in place while learning',
    nn.modules.dropout._DropoutNd: 'it draws random numbers while learning',
}


def unstackable_layer(modules: dict[str, nn.Module]) -> Optional[str]:
    """The first layer of `modules` (a policy's stacked modules) whose update cannot be stacked over seeds, in words
    naming it and why; None when every layer can."""
    for name, module in modules.items():
        for path, layer in module.named_modules(prefix=name):
            if isinstance(layer, nn.modules.batchnorm._BatchNorm) and not layer.track_running_stats:
                continue  # batch statistics alone: nothing written in place
            why = next((why for kind, why in UNSTACKABLE_LAYERS.items() if isinstance(layer, kind)), None)
            if why is not None:
                return f"layer '{path}' ({type(layer).__name__}: {why})"
    return None


class _Holder(nn.Module):
    """Seed 0's stacked modules under their names, so one functional call can swap in any seed's weights."""

    def __init__(self, modules: dict[str, nn.Module]) -> None:
        super().__init__()
        for name, module in modules.items():
            self.add_module(name, module)

    def forward(self, loss: LossFn, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        return loss(batch)


class SeedStack:
    """The stacked modules and optimizers of `policies` (one per seed, built from one config)."""

    def __init__(self, policies: Sequence[PolicyLike]) -> None:
        self.size = len(policies)
        modules = [policy.parts.stacked() for policy in policies]
        layer = unstackable_layer(modules[0])
        if layer is not None:
            raise ConfigError(f"a seed group cannot stack this policy's updates: its {layer}; set "
                              f"seed_group.share=in_turn (the default picks it) or train one process per seed")
        # a plan's losses close over its own seed's modules, so the functional call swaps the stacked tensors into
        # the modules of the seed whose plan leads (seed 0 may have stopped)
        self._holders = [_Holder(seed_modules) for seed_modules in modules]
        self.tensors: dict[str, torch.Tensor] = {}  # 'model.encoder.0.weight' -> [S, ...]
        self._key_of: dict[int, str] = {}           # id of a seed-0 tensor -> its key
        self._seed_tensors: list[list[torch.Tensor]] = [[] for _ in policies]
        for name in modules[0]:
            members = [dict(_named_tensors(seed_modules[name])) for seed_modules in modules]
            for tensor_name, first in members[0].items():
                if id(first) in self._key_of:
                    continue  # a module listed twice
                key = f'{name}.{tensor_name}'
                self._stack(key, [member[tensor_name] for member in members])
                self._key_of[id(first)] = key
        self._optimizers: dict[int, _StackedOptimizer] = {}  # by position in the seeds' optimizer lists
        self._seed_optimizers = [policy.learn_optimizers() for policy in policies]
        self._reach_checked: set[int] = set()  # the stages (by position) whose first stacked update was checked

    def _stack(self, key: str, tensors: list[torch.Tensor]) -> None:
        stacked = torch.stack([tensor.detach() for tensor in tensors])
        for seed, tensor in enumerate(tensors):
            tensor.data = stacked[seed]
            self._seed_tensors[seed].append(tensor)
        self.tensors[key] = stacked

    def _check_reach(self, position: int, loss: LossFn, seed: int, batch: dict[str, Any], trainable: Sequence[str],
                     stacked_grads: dict[str, torch.Tensor]) -> None:
        """At a stage's first stacked update: the tensors its loss reaches stacked are those it reaches for `seed`
        alone (on the seed's own tensors and batch); a tensor read other than through the module that holds it (an
        attribute kept aside) would otherwise freeze, or move, without a word."""
        self._reach_checked.add(position)
        keys = list(self.tensors)
        own = [self._seed_tensors[seed][keys.index(key)] for key in trainable]
        differentiable = [(key, tensor) for key, tensor in zip(trainable, own) if tensor.requires_grad]
        value, _ = loss(batch)
        grads = torch.autograd.grad(value, [tensor for _, tensor in differentiable], allow_unused=True)
        reached_alone = {key for (key, _), grad in zip(differentiable, grads) if grad is not None}
        for key in trainable:
            if (key in reached_alone) != (key in stacked_grads):
                how = ('does not reach', 'reaches') if key in reached_alone else ('reaches', 'does not reach')
                raise ConfigError(f"a seed group's stacked update {how[0]} '{key}', which the seed's own update "
                                  f"{how[1]}: its loss reads that tensor other than through the declared part that "
                                  f"holds it (an attribute kept aside?); read it through the part's module")

    def stacked_of(self, tensor: torch.Tensor) -> Optional[torch.Tensor]:
        """The stacked tensor [S, ...] whose first slice is the first seed's `tensor` (None: not stacked)."""
        key = self._key_of.get(id(tensor))
        return None if key is None else self.tensors[key]

    def release(self, seed: int) -> None:
        """Give `seed` (which stopped) tensors of its own again, so the stack's later steps leave it as it is."""
        for tensor in self._seed_tensors[seed]:
            tensor.data = tensor.data.clone()
        for optimizer in self._seed_optimizers[seed]:
            for state in optimizer.state.values():
                for name, value in state.items():
                    if isinstance(value, torch.Tensor):
                        state[name] = value.clone()

    # ----- one update of every seed --------------------------------------------------------------
    def update(self, plans: Sequence[Optional[LearnPlan]],
               batches: Sequence[Optional[dict[str, Any]]]) -> list[Optional[dict[str, Any]]]:
        """Run the seeds' plans (one per seed, of one policy and config) on their batches; each seed's values
        to log, as `run_plan` gives them for one seed. A seed that stopped has None for both (and gets None):
        its slice computes on another seed's batch, and nothing reads it."""
        live = [seed for seed, plan in enumerate(plans) if plan is not None]
        if not live:
            return [None] * self.size
        first = plans[live[0]]
        assert first is not None
        batch = stack_batches([batches[seed] if plans[seed] is not None else batches[live[0]]
                               for seed in range(self.size)])
        infos: list[Optional[dict[str, Any]]] = [None if plan is None else dict(plan.info) for plan in plans]
        for index, stage in enumerate(first.stages):
            optimizer = self._optimizer(live[0], stage.optimizer)
            grads, loss, values = self._gradient(self._holders[live[0]], stage.loss, optimizer.keys, batch)
            if index not in self._reach_checked:
                own_batch = batches[live[0]]
                assert own_batch is not None
                self._check_reach(index, stage.loss, live[0], own_batch, optimizer.keys, grads)
            norm = optimizer.step(grads, stage.grad_clip_norm, stage.optimizer, norm_wanted=stage.norm_key is not None)
            for seed, (plan, info) in enumerate(zip(plans, infos)):
                if plan is None or info is None:
                    continue
                info.update({name: value[seed] for name, value in values.items()})
                if stage.norm_key is not None and norm is not None:
                    info[stage.norm_key] = norm[seed]
                if stage.loss_key is not None:
                    info[stage.loss_key] = loss[seed].detach()
                own = plan.stages[index].after_step
                if own is not None:
                    own()
                seen = plan.stages[index].seen
                if seen is not None:
                    seen({name: value[seed] for name, value in values.items()})
        for plan in plans:
            if plan is not None and plan.after is not None:
                plan.after()
        return infos

    def _gradient(self, holder: _Holder, loss: LossFn, trainable: Sequence[str], batch: dict[str, Any]
                  ) -> tuple[dict[str, torch.Tensor], torch.Tensor, dict[str, torch.Tensor]]:
        """(gradients of `trainable`, loss, values), each with the seed dimension first: the loss of every seed in
        one vmapped forward pass, differentiated by one ordinary backward pass of their sum (each seed's loss
        depends on its own slices only, so the sum's gradient is every seed's own); `holder` holds the modules the
        loss closes over."""

        def seed_loss(tensors: dict[str, torch.Tensor], rows: dict[str, Any]
                      ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
            return functional_call(holder, tensors, (loss, rows), strict=True)
        leaves = {key: self.tensors[key].detach().requires_grad_(key in trainable) for key in self.tensors}
        # a loss that draws random numbers would draw them for all seeds from one generator: refused
        value, values = vmap(seed_loss, randomness='error')(leaves, batch)
        grads = torch.autograd.grad(value.sum(), [leaves[key] for key in trainable], allow_unused=True)
        # a vmapped matmul's weight gradient comes out transposed in memory; the fused optimizers read a gradient as
        # laid out like its parameter, so it is made contiguous (as the stacked parameters are). A tensor the loss
        # does not reach gets none, and its optimizer leaves it alone, as it would in a run alone.
        return ({key: grad.contiguous() for key, grad in zip(trainable, grads) if grad is not None},
                value.detach(), values)

    def _optimizer(self, seed: int, optimizer: torch.optim.Optimizer) -> _StackedOptimizer:
        """The stacked optimizer that stands for `optimizer` of `seed` (the same one of every seed)."""
        position = next((index for index, own in enumerate(self._seed_optimizers[seed]) if own is optimizer), None)
        if position is None:
            raise ConfigError('a seed group steps the optimizers of Policy.learn_optimizers() only; a loss stage '
                              'of this policy names another one')
        stacked = self._optimizers.get(position)
        if stacked is None:
            first = self._seed_optimizers[0][position]
            keys = []
            for group in first.param_groups:
                for param in group['params']:
                    if id(param) not in self._key_of:
                        raise ConfigError('a seed group steps only the tensors of the declared parts (Parts.stacked); an '
                                          'optimizer of this policy steps another one')
                    keys.append(self._key_of[id(param)])
            stacked = _StackedOptimizer(first, [own[position] for own in self._seed_optimizers], keys, self.tensors)
            self._optimizers[position] = stacked
        return stacked


class _StackedOptimizer:
    """One optimizer over the stacked tensors, standing for the same optimizer of every seed.

    The seeds' optimizer states are views of its state (once it has one), so a seed's checkpoint holds
    its own moments; a state the seeds already had (a resumed run) is stacked first.
    """

    def __init__(self, first: torch.optim.Optimizer, seeds: list[torch.optim.Optimizer], keys: list[str],
                 tensors: dict[str, torch.Tensor]) -> None:
        self.seeds, self.keys = seeds, keys
        groups, position = [], 0
        for group in first.param_groups:
            count = len(group['params'])
            groups.append({**{k: v for k, v in group.items() if k != 'params'},
                           'params': [tensors[key] for key in keys[position:position + count]]})
            position += count
        self.params = [param for group in groups for param in group['params']]
        self.optimizer = type(first)(groups, **first.defaults)
        self._seed_params = [[param for group in seed.param_groups for param in group['params']] for seed in seeds]
        self._linked: set[int] = set()  # the parameters whose seed states are views of the stacked one
        if any(seed.state for seed in seeds):
            self._stack_states()

    def _stack_states(self) -> None:
        for index, param in enumerate(self.params):
            states = [seed.state[params[index]] for seed, params in zip(self.seeds, self._seed_params)]
            if not states[0]:
                continue
            self.optimizer.state[param] = {
                name: torch.stack([state[name] for state in states]) if _per_element(name, value) else value.clone()
                for name, value in states[0].items()}
        self._link_states()

    def _link_states(self) -> None:
        """Point every seed's state at its slice of the stacked state (once the stacked one exists)."""
        for index, param in enumerate(self.params):
            state = self.optimizer.state.get(param)
            if index in self._linked or not state:
                continue
            for seed, (optimizer, params) in enumerate(zip(self.seeds, self._seed_params)):
                optimizer.state[params[index]] = {
                    name: value[seed] if _per_element(name, value) else value for name, value in state.items()}
            self._linked.add(index)

    def step(self, grads: dict[str, torch.Tensor], max_norm: Optional[float], schedule: torch.optim.Optimizer,
             norm_wanted: bool = True) -> Optional[torch.Tensor]:
        """Clip each seed's gradient to `max_norm` (None: not clipped) over this optimizer's tensors and step at the
        learning rate of `schedule` (a live seed's optimizer, as its plan set it); the norms [S] before clipping,
        when they were computed (clipping, or `norm_wanted`)."""
        reached = [(param, grads[key]) for param, key in zip(self.params, self.keys) if key in grads]
        ordered = [grad for _, grad in reached]
        clip = max_norm is not None and math.isfinite(max_norm)
        norm = None
        if clip or norm_wanted:
            per_tensor = [torch.linalg.vector_norm(grad.reshape(grad.shape[0], -1), dim=1) for grad in ordered]
            norm = torch.linalg.vector_norm(torch.stack(per_tensor), dim=0)
        if clip:
            assert norm is not None and max_norm is not None
            scale = (max_norm / (norm + CLIP_EPS)).clamp(max=1.0)
            ordered = [grad * scale.view(-1, *([1] * (grad.dim() - 1))) for grad in ordered]
        for (param, _), grad in zip(reached, ordered):
            param.grad = grad
        for group, own_group in zip(self.optimizer.param_groups, schedule.param_groups):
            group['lr'] = own_group['lr']  # the seeds share a config, so a schedule
        self.optimizer.step()
        for param in self.params:
            param.grad = None
        if len(self._linked) < len(self.params):
            self._link_states()
        return None if norm is None else norm.detach()


def _per_element(name: str, value: Any) -> bool:
    """Whether an optimizer state entry has a value per element of its parameter (Adam's moments, a momentum
    buffer) rather than one for all seeds (the step count, the same for every seed of a group)."""
    return isinstance(value, torch.Tensor) and name not in SHARED_STATE


def _named_tensors(module: nn.Module) -> list[tuple[str, torch.Tensor]]:
    return [*module.named_parameters(), *module.named_buffers()]


def stack_batches(batches: Sequence[Any]) -> Any:
    """The seeds' batches stacked along a new first dimension; entries that are not tensors (an env step the
    plans already read) are left out."""
    first = batches[0]
    if isinstance(first, dict):
        stacked = {key: stack_batches([batch[key] for batch in batches]) for key in first}
        return {key: value for key, value in stacked.items() if value is not None}
    if isinstance(first, torch.Tensor):
        return torch.stack(list(batches))
    return None
