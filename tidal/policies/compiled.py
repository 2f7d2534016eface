"""Compiled updates (`policy.learn.compile`): each loss stage's step through `torch.compile`.

A stage's step is two compiled functions around the eager `loss.backward()`: the loss (whose backward
AOTAutograd compiles with it) and the gradient clipping with the optimizer step. The backward stays between
them so that the gradient averaging of several learner processes (`set_gradient_sync`) runs where it
always did. Each function is compiled once per stage and reused by every update: a value that changes
between updates (a decaying learning rate or clip ratio) must reach it as a tensor, or each new value would
compile it again, so under compile the optimizers' learning rates are tensors (`set_learning_rate` fills
them in place) and a policy passes its schedules through `CompiledUpdate.scalar`.

On CUDA, 'reduce-overhead' and 'max-autotune' replay the compiled functions as CUDA graphs: the optimizers
become capturable (their step counts live on the device), each update starts a new graph step
(`torch.compiler.cudagraph_mark_step_begin`), and the values an update returns stay valid until the next
update, which is when the learner reads them.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Hashable, Optional

import torch

from tidal.base.errors import ConfigError

#: The values of `policy.learn.compile`; false (YAML's bare `off`) means 'none', true 'default'.
COMPILE_MODES = ('none', 'default', 'reduce-overhead', 'max-autotune')
_GRAPH_MODES = ('reduce-overhead', 'max-autotune')


def compile_mode(value: Any, key: str = 'policy.learn.compile') -> str:
    """The compile mode a config value names: one of COMPILE_MODES."""
    if value is None or value is False:
        return 'none'
    if value is True:
        return 'default'
    if value not in COMPILE_MODES:
        choices = ', '.join(repr(mode) for mode in COMPILE_MODES)
        raise ConfigError(f'{key} must be one of {choices} (or false), got {value!r}')
    return str(value)


def set_learning_rate(optimizer: torch.optim.Optimizer, lr: float) -> None:
    """Give every param group of `optimizer` the rate `lr`, in place where it is a tensor (a compiled step's)."""
    for group in optimizer.param_groups:
        if isinstance(group['lr'], torch.Tensor):
            group['lr'].fill_(lr)
        else:
            group['lr'] = lr


class CompiledUpdate:
    """The compiled functions of one policy's update, by stage, and what compiling asks of its optimizers."""

    def __init__(self, mode: str, device: torch.device) -> None:
        self.mode = mode
        self.device = torch.device(device)
        self.graphs = mode in _GRAPH_MODES and self.device.type == 'cuda'
        self._functions: dict[Hashable, Callable[..., Any]] = {}
        self._steps: dict[tuple[int, Optional[float], bool], Callable[[], Optional[torch.Tensor]]] = {}
        self._scalars: dict[Hashable, torch.Tensor] = {}

    def begin(self) -> None:
        """Open one update: a new CUDA-graph step, whose replays may overwrite the previous update's outputs."""
        if self.graphs:
            torch.compiler.cudagraph_mark_step_begin()

    def function(self, key: Hashable, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn` compiled, once per `key` and code: a bound method or a closure made anew each update keeps its
        compiled code as long as its code and the objects it reads are the same."""
        code = getattr(getattr(fn, '__func__', fn), '__code__', None)
        cache_key = (key, code)
        compiled = self._functions.get(cache_key)
        if compiled is None:
            compiled = self._functions[cache_key] = torch.compile(_call, mode=self.mode)
        return lambda *args, **kwargs: compiled(fn, *args, **kwargs)

    def scalar(self, key: Hashable, value: float) -> torch.Tensor:
        """`value` as a 0-d tensor on the device, filled in place, so that its changes do not recompile."""
        tensor = self._scalars.get(key)
        if tensor is None:
            tensor = self._scalars[key] = torch.zeros((), device=self.device)
        return tensor.fill_(value)

    def step(self, optimizer: torch.optim.Optimizer, max_norm: Optional[float],
             norm_wanted: bool) -> Optional[torch.Tensor]:
        """Clip the gradients of `optimizer`'s parameters to `max_norm` (None: not clipped) and step it, compiled;
        returns the norm before clipping when `norm_wanted` or clipping."""
        self.prepare(optimizer)
        key = (id(optimizer), max_norm, norm_wanted)
        step = self._steps.get(key)
        if step is None:
            step = self._steps[key] = torch.compile(_clip_and_step(optimizer, max_norm, norm_wanted), mode=self.mode)
        return step()

    def prepare(self, optimizer: torch.optim.Optimizer) -> None:
        """Learning rates as tensors (a schedule then fills them, `set_learning_rate`; a loaded checkpoint may have
        put floats back) and, for CUDA graphs, a capturable optimizer whose step counts live on the device."""
        for group in optimizer.param_groups:
            if not isinstance(group['lr'], torch.Tensor):
                group['lr'] = torch.tensor(float(group['lr']), device=self.device)
            if self.graphs and not group.get('capturable', True):
                group['capturable'] = True
                for param in group['params']:
                    state = optimizer.state.get(param, {})
                    if isinstance(state.get('step'), torch.Tensor):
                        state['step'] = state['step'].to(self.device)


def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return fn(*args, **kwargs)


def _clip_and_step(optimizer: torch.optim.Optimizer, max_norm: Optional[float],
                   norm_wanted: bool) -> Callable[[], Optional[torch.Tensor]]:
    limit = math.inf if max_norm is None else max_norm
    clip = max_norm is not None or norm_wanted

    def clip_and_step() -> Optional[torch.Tensor]:
        norm = None
        if clip:
            params = [param for group in optimizer.param_groups for param in group['params'] if param.grad is not None]
            norm = torch.nn.utils.clip_grad_norm_(params, limit)
        optimizer.step()
        return norm

    return clip_and_step
