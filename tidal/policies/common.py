"""Small pieces the policies share: optimizer construction and stepping, batch access.

Every optimizer step of a policy goes through `optimizer_step` or `clipped_step`: after the backward
pass they first run the gradient synchronisation registered for that optimizer
(`tidal.base.gradient_sync`; under several learner processes `tidal.worker.distributed` registers the
average over the ranks), so that clipping and the logged gradient norm see the gradient of the whole
batch. A single process registers nothing and pays one dict look-up per step.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence

import torch

from tidal.base.gradient_sync import sync_gradients
from tidal.base.parts import Parts
from tidal.base.stages import LearnPlan
from tidal.policies.compiled import CompiledUpdate
from tidal.policies.fused_adam import FusedAdam
from tidal.rl_utils.exploration import epsilon_at
from tidal.rl_utils.td import nstep_return


def adam(params: Iterable[Any], lr: float, betas: Sequence[float] = (0.9, 0.999), eps: float = 1e-8
         ) -> torch.optim.Adam:
    """Adam with fused kernels (CPU and CUDA): one kernel per step instead of one per parameter.

    `params` are parameters or param groups (dicts with their own 'lr').
    """
    return FusedAdam(list(params), lr=lr, betas=(float(betas[0]), float(betas[1])), eps=eps)


class UpdateCount:
    """How many updates a policy has made (the clock of its target copies or delayed steps), kept by its
    checkpoint as a 0-d tensor (`as_int`: as a Python int, the form MuZero's checkpoints have)."""

    def __init__(self, as_int: bool = False) -> None:
        self.value = 0
        self.as_int = as_int

    def state_dict(self) -> torch.Tensor | int:
        return self.value if self.as_int else torch.tensor(self.value)

    def load_state_dict(self, state: torch.Tensor) -> None:
        self.value = int(state)


class EpsilonClock:
    """The env steps a policy has collected (warm-up included) and the epsilon of `schedule` (other.eps) at them;
    its state rides in the collect state dict, so that a resumed run continues the schedule where it stopped."""

    def __init__(self, schedule: Mapping[str, Any]) -> None:
        self.schedule = schedule
        self.env_step = 0

    def epsilon(self) -> float:
        """epsilon now (0 when the schedule's type is None: no epsilon-greedy collection)."""
        return 0.0 if self.schedule['type'] is None else epsilon_at(self.env_step, self.schedule)

    def tick(self, env_steps: int) -> None:
        self.env_step += env_steps

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {'env_step': torch.tensor(self.env_step)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.env_step = int(state.get('env_step', 0))


def _backward_and_sync(optimizer: torch.optim.Optimizer, loss: torch.Tensor,
                       gradient: Optional[torch.Tensor]) -> None:
    optimizer.zero_grad(set_to_none=True)
    loss.backward(gradient)
    sync_gradients(optimizer)


def optimizer_step(optimizer: torch.optim.Optimizer, loss: torch.Tensor,
                   gradient: Optional[torch.Tensor] = None) -> None:
    """One step on `loss` (or on a non-scalar output with its `gradient`, as `Tensor.backward` takes it)."""
    _backward_and_sync(optimizer, loss, gradient)
    optimizer.step()


def clipped_step(optimizer: torch.optim.Optimizer, loss: torch.Tensor, max_norm: Optional[float],
                 parameters: Optional[Iterable[torch.Tensor]] = None) -> torch.Tensor:
    """One step on `loss` with the global gradient norm of `parameters` (default: the optimizer's)
    clipped to `max_norm` (None: not clipped); returns the norm before clipping."""
    _backward_and_sync(optimizer, loss, None)
    if parameters is None:
        parameters = [p for group in optimizer.param_groups for p in group['params'] if p.grad is not None]
    norm = clip_grad_norm(list(parameters), max_norm)
    optimizer.step()
    return norm


@torch.no_grad()
def clip_grad_norm(parameters: list[torch.Tensor], max_norm: Optional[float]) -> torch.Tensor:
    """`torch.nn.utils.clip_grad_norm_` (the 2-norm, `max_norm` None: not clipped), bit-identical to it: the same
    ops on the same tensors, without the per-call grouping by device and dtype around them (about a tenth of a
    small update). Gradients on several devices or dtypes take torch's own function."""
    limit = math.inf if max_norm is None else float(max_norm)
    grads = [param.grad for param in parameters if param.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    first = grads[0]
    if any(grad.device != first.device or grad.dtype != first.dtype or grad.is_sparse for grad in grads):
        return torch.nn.utils.clip_grad_norm_(parameters, limit)
    norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads, 2.0)), 2.0)
    if limit != math.inf:  # torch scales by min(inf / norm, 1): by exactly 1 unless the norm itself is not finite
        torch._foreach_mul_(grads, torch.clamp(limit / (norm + 1e-6), max=1.0))
    return norm


def stage_step(optimizer: torch.optim.Optimizer, loss: torch.Tensor, max_norm: Optional[float], norm_wanted: bool,
               compiled: Optional[CompiledUpdate] = None) -> Optional[torch.Tensor]:
    """One step on `loss`, its gradient clipped to `max_norm` (None: not clipped), compiled with `compiled`;
    returns the gradient norm before clipping when clipping or `norm_wanted`."""
    if compiled is not None:
        _backward_and_sync(optimizer, loss, None)
        return compiled.step(optimizer, max_norm, norm_wanted)
    if max_norm is None and not norm_wanted:
        optimizer_step(optimizer, loss)
        return None
    return clipped_step(optimizer, loss, max_norm)


def run_plan(plan: LearnPlan, batch: dict[str, Any], compiled: Optional[CompiledUpdate] = None,
             parts: Optional[Parts] = None) -> dict[str, Any]:
    """One update of a single policy: each stage's loss on `batch` and its (clipped) step, in order; returns
    the plan's values with every stage's loss, gradient norm and logged values. With `compiled`, each stage's
    loss and step run compiled (`policy.learn.compile`); with the policy's `parts`, each stage's loss runs in
    train mode for what its optimizer steps and eval mode for what it only reads."""
    info: dict[str, Any] = dict(plan.info)
    if compiled is not None:
        compiled.begin()
    for index, stage in enumerate(plan.stages):
        loss_fn = stage.loss if compiled is None else compiled.function(('stage', index), stage.loss)
        if parts is not None:
            parts.use_mode(stage.optimizer)
        with constant_parameters(stage.frozen):
            loss, values = loss_fn(batch)
        info.update(values)
        norm = stage_step(stage.optimizer, loss, stage.grad_clip_norm, stage.norm_key is not None, compiled)
        if stage.norm_key is not None and norm is not None:
            info[stage.norm_key] = norm.detach()
        if stage.after_step is not None:
            stage.after_step()
        if stage.seen is not None:
            stage.seen(values)
        if stage.loss_key is not None:
            info[stage.loss_key] = loss.detach()
    if plan.after is not None:
        plan.after()
    return info


@contextmanager
def constant_parameters(modules: Sequence[torch.nn.Module]) -> Iterator[None]:
    """The modules' parameters need no gradient inside the block (a loss reads them as constants); each gets its
    own flag back after it (a frozen copy stays frozen)."""
    params = [param for module in modules for param in module.parameters()]
    flags = [param.requires_grad for param in params]
    for param in params:
        param.requires_grad_(False)
    try:
        yield
    finally:
        for param, flag in zip(params, flags):
            param.requires_grad_(flag)


def bootstrap_mask(batch: dict[str, Any], ignore_done: bool) -> torch.Tensor:
    """The `terminated` column as float, or zeros when the config says to always bootstrap."""
    terminated = batch['terminated'].to(torch.float32)
    return torch.zeros_like(terminated) if ignore_done else terminated


def td_reward(batch: dict[str, Any], gamma: float) -> tuple[torch.Tensor, float | torch.Tensor]:
    """(reward, discount of the bootstrap) of a replayed batch: one step's reward and gamma, or an n-step window's
    discounted rewards and gamma^length (`policy.nstep`; the replay feed builds the windows)."""
    if 'nstep_reward' not in batch:
        return batch['reward'], gamma
    return nstep_return(batch['nstep_reward'], batch['nstep_len'], gamma)


def sample_weight(batch: dict[str, Any], use_is_weight: bool) -> Optional[torch.Tensor]:
    """Importance-sampling weights of a prioritized batch, if the config asks for them."""
    return batch['weight'] if use_is_weight else None


def split_action_mask(obs: Any) -> tuple[Any, Optional[torch.Tensor]]:
    """(observation, action_mask or None) from a plain or dict observation batch.

    The observation of a dict is its 'observation' entry, or, when it has none, the dict of its other
    entries (a multi-agent obs: 'agent_state' and 'global_state', which the model reads).
    """
    if not isinstance(obs, dict):
        return obs, None
    if 'observation' in obs:
        return obs['observation'], obs.get('action_mask')
    return {key: value for key, value in obs.items() if key != 'action_mask'}, obs.get('action_mask')


def sample_categorical(prob: torch.Tensor, generator: Optional[torch.Generator] = None) -> torch.Tensor:
    """One action index per row of probabilities [..., A] -> [...] (e.g. [B] or [B, agents]), drawn from
    `generator` (torch's global one when None)."""
    return torch.multinomial(prob.reshape(-1, prob.shape[-1]), 1, generator=generator).reshape(prob.shape[:-1])
