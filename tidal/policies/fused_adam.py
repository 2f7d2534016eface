"""Adam whose fused step runs as two ops: the step-count increment and the fused kernel.

`torch.optim.Adam(fused=True)` already updates every parameter in one kernel, but each `step()` first runs a
few hundred microseconds of Python around it (its profiler span, grad-mode switches, per-parameter checks, a
grouping by device and dtype). For an off-policy update of three small networks that is several percent of the
update.
`FusedAdam.step` calls the same two ops on the same state (the increment with a 0-d tensor 1 per parameter
rather than Python's 1, which the CPU would first turn into a tensor for each), so its results are bit-identical
and its checkpoints are Adam's. Whatever the lean path does not cover (hooks, a closure, a gradient scaler,
AMSGrad, mixed devices or dtypes, a parameter without a gradient, a first step, tracing by `torch.compile`) takes
Adam's own `step`, hooks and profiler span included.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import torch
from torch.optim.optimizer import Optimizer, _global_optimizer_post_hooks, _global_optimizer_pre_hooks

# Adam's step with its profiler span and hooks, as `Optimizer` wraps it, whether or not an Adam was built yet
_ADAM_STEP = (torch.optim.Adam.step if getattr(torch.optim.Adam.step, 'hooked', False)
              else Optimizer.profile_hook_step(torch.optim.Adam.step))


class FusedAdam(torch.optim.Adam):
    """`torch.optim.Adam` (built with `fused=True`) with a lean `step`; everything else is Adam's."""

    def __init__(self, params: Any, **kwargs: Any) -> None:
        kwargs.setdefault('fused', True)
        super().__init__(params, **kwargs)
        self._ones_of: dict[tuple[torch.device, torch.dtype], torch.Tensor] = {}

    @torch.no_grad()
    def step(self, closure: Optional[Callable[[], float]] = None) -> Optional[float]:  # type: ignore[override]
        if closure is not None or not self._lean_step_applies():
            return _ADAM_STEP(self, closure)
        groups = [self._lean_group(group) for group in self.param_groups]
        if any(group is None for group in groups):
            return _ADAM_STEP(self, closure)
        for group, tensors in zip(self.param_groups, groups):
            assert tensors is not None
            params, grads, exp_avgs, exp_avg_sqs, steps = tensors
            if not params:
                continue
            torch._foreach_add_(steps, self._ones(steps[0], len(steps)))
            kernel = torch._fused_adamw_ if group['decoupled_weight_decay'] else torch._fused_adam_
            lr = group['lr']
            kernel(params, grads, exp_avgs, exp_avg_sqs, [], steps, amsgrad=False,
                   lr=lr if isinstance(lr, torch.Tensor) else float(lr),
                   beta1=float(group['betas'][0]), beta2=float(group['betas'][1]),
                   weight_decay=float(group['weight_decay']), eps=float(group['eps']), maximize=group['maximize'],
                   grad_scale=None, found_inf=None)
        return None

    step.hooked = True  # type: ignore[attr-defined]  # Optimizer must not wrap it: the fallback runs the hooks

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Adam's, without its profiler span (a tenth of a small step's time)."""
        if not set_to_none:
            return super().zero_grad(set_to_none)
        for group in self.param_groups:
            for param in group['params']:
                param.grad = None

    def _lean_step_applies(self) -> bool:
        return not (torch.compiler.is_compiling() or self._optimizer_step_pre_hooks
                    or self._optimizer_step_post_hooks or _global_optimizer_pre_hooks
                    or _global_optimizer_post_hooks or getattr(self, 'grad_scale', None) is not None
                    or getattr(self, 'found_inf', None) is not None)

    def _lean_group(self, group: dict[str, Any]) -> Optional[tuple[list[torch.Tensor], ...]]:
        """The group's parameters, gradients, moments and step counts, or None when Adam's own step must run."""
        if not group['fused'] or group['amsgrad'] or group['differentiable']:
            return None
        params: list[torch.Tensor] = group['params']
        grads, exp_avgs, exp_avg_sqs, steps = [], [], [], []
        device, dtype = (params[0].device, params[0].dtype) if params else (None, None)
        for param in params:
            state = self.state.get(param)
            if param.grad is None or not state or param.device != device or param.dtype != dtype:
                return None
            grads.append(param.grad)
            exp_avgs.append(state['exp_avg'])
            exp_avg_sqs.append(state['exp_avg_sq'])
            steps.append(state['step'])
        if steps and steps[0].device != device:
            return None
        return params, grads, exp_avgs, exp_avg_sqs, steps

    def _ones(self, step: torch.Tensor, count: int) -> list[torch.Tensor]:
        """`count` times a 0-d 1 of the step counts' device and dtype. Added as a list of tensors, the increment
        is one add per parameter; added as Python's 1, the CPU first turns the 1 into a tensor for each of them.
        The sums are the same."""
        key = (step.device, step.dtype)
        one = self._ones_of.get(key)
        if one is None:
            one = self._ones_of[key] = torch.ones((), dtype=step.dtype, device=step.device)
        return [one] * count
