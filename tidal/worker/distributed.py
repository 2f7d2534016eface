"""Several learner processes (DDP): the process group, identical starting weights and averaged gradients.

`torchrun --nproc_per_node=K -m tidal train CONFIG` starts K processes (ranks). Each collects from its
own seeds into its own buffers; every optimizer step of the policy first averages the gradients over
the ranks, so all ranks keep identical weights and an update equals one on the K batches together
(the mean of per-rank mean-loss gradients is the gradient of the mean loss over the concatenated
batch when the ranks' batches have the same size). Only rank 0 writes the run folder.

Policies own their optimizers and step them themselves (several per update, some with clipping), so
the averaging does not wrap a model: each policy lists its optimizers (`LearnView.optimizers`, and those
of extra views that are learn modes, PPG's 'aux'), and every optimizer gets a gradient synchronisation
(`tidal.base.gradient_sync`) that the policies' step helpers (`optimizer_step` / `clipped_step`) run between
the backward pass and clipping: clipping and the logged `grad_norm` see the averaged gradient, as one
process on the ranks' batches together would. A policy that calls `optimizer.step()` by hand still
gets its gradients averaged, in a step pre-hook, after whatever it did to them.

`Lockstep` is what the ranks agree at the top of the run loop (a signal, the stop value, a checkpoint;
that they collected in lockstep) and how a checkpoint carries every rank's own state. Rank 0 keeps the
seeds of a single process; rank r > 0 seeds its global generators, collector envs and buffers from
`stream_seed(seed, DDP_STREAM, r)`.

A single process (no WORLD_SIZE, or WORLD_SIZE=1) creates no process group and pays nothing.
"""
from __future__ import annotations

import os
import signal
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable, NamedTuple, Optional, Sequence

import torch
import torch.distributed as dist
from easydict import EasyDict

from tidal.base.errors import TidalError
from tidal.base.gradient_sync import set_gradient_sync
from tidal.base.modes import LearnView, PolicyViews
from tidal.base.nest import to_cpu, tree_leaves, tree_replace
from tidal.worker.rng import stream_seed

DDP_STREAM = 3  # stream_seed stream of the seeds of ranks > 0 (rank 0 keeps the single-process seeds)

_owned_group = False  # whether tidal created the process group (and so destroys it)


@dataclass(frozen=True)
class DistContext:
    """This process's place among the learners, as torchrun's env vars give it."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device('cpu')  # where the collectives' tensors live (cuda under nccl)

    @property
    def is_main(self) -> bool:
        """Rank 0: the one process that evaluates and writes the run folder."""
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def init_distributed(device: torch.device) -> DistContext:
    """Join torchrun's process group (gloo on CPU, nccl on CUDA) when WORLD_SIZE > 1; idempotent.

    Under CUDA each rank uses the GPU of its LOCAL_RANK, so `policy.device='cuda'` means its own GPU.
    """
    global _owned_group
    world_size = int(os.environ.get('WORLD_SIZE', '1'))
    if world_size <= 1:
        return DistContext()
    local_rank = int(os.environ.get('LOCAL_RANK', '0'))
    device = torch.device(device)
    if device.type == 'cuda':
        torch.cuda.set_device(local_rank)
        device = torch.device('cuda', local_rank)
    if not dist.is_initialized():
        dist.init_process_group(backend='nccl' if device.type == 'cuda' else 'gloo')
        _owned_group = True
    return DistContext(dist.get_rank(), dist.get_world_size(), local_rank, device)


def shutdown_distributed() -> None:
    """Destroy the process group if tidal created it (a user's own group is left alone)."""
    global _owned_group
    if _owned_group and dist.is_initialized():
        dist.destroy_process_group()
    _owned_group = False


def agree(context: DistContext, values: Sequence[float]) -> list[float]:
    """The maximum of each value over the ranks, in one all-reduce: a flag any rank raises holds for all."""
    if not context.enabled:
        return list(values)
    tensor = torch.tensor(list(values), dtype=torch.float64, device=context.device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return tensor.tolist()


def broadcast_object(context: DistContext, obj: Any) -> Any:
    """Rank 0's `obj` on every rank (pickled: for small things such as a path or an error message)."""
    if not context.enabled:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0, device=context.device)
    return box[0]


def gather_to_main(context: DistContext, obj: Any) -> Optional[list[Any]]:
    """Every rank's `obj` (tensors moved to the CPU), as a list by rank on rank 0; None elsewhere."""
    if not context.enabled:
        return [obj]
    obj = to_cpu(obj)
    gathered: Optional[list[Any]] = [None] * context.world_size if context.is_main else None
    if context.device.type == 'cuda':  # gather_object works over nccl only through the current GPU
        torch.cuda.set_device(context.device)
    dist.gather_object(obj, gathered, dst=0)
    return gathered


def broadcast_state(context: DistContext, state: dict[str, Any]) -> dict[str, Any]:
    """Rank 0's values of every tensor in a (nested) state dict, so all ranks start identical.

    The ranks must hold the same structure (keys, shapes, dtypes): they built the same policy from the
    same config. Non-tensor entries are kept as they are on each rank.
    """
    if not context.enabled:
        return state
    leaves = [(path, leaf) for path, leaf in tree_leaves(state, sequences=True)
              if isinstance(leaf, torch.Tensor)]
    signature = [(path, tuple(t.shape), str(t.dtype)) for path, t in leaves]
    if broadcast_object(context, signature) != signature:
        raise TidalError(f'rank {context.rank} built a policy whose state differs from rank 0\'s; all ranks '
                         f'must run the same config')
    received = {}
    for path, tensor in leaves:
        buffer = tensor.detach().to(context.device).contiguous().clone()
        dist.broadcast(buffer, src=0)
        received[path] = buffer.to(tensor.device)
    return tree_replace(state, received)


def learn_optimizers(views: PolicyViews) -> list[torch.optim.Optimizer]:
    """Every optimizer the policy's updates step, each once: its learn mode's and those of its extra views
    that are learn modes (PPG's auxiliary phase)."""
    found: dict[int, torch.optim.Optimizer] = {}
    for mode in [views.learn, *(view for view in views.extra.values() if isinstance(view, LearnView))]:
        for optimizer in mode.optimizers():
            found.setdefault(id(optimizer), optimizer)
    return list(found.values())


def average_gradients(context: DistContext, optimizers: Iterable[torch.optim.Optimizer]) -> None:
    """Make each step of these optimizers first replace their parameters' gradients by the mean over the
    ranks: in the step helpers before clipping, else (a plain `optimizer.step()`) just before the step."""
    if not context.enabled:
        return
    for optimizer in optimizers:
        _average_on_every_step(context, optimizer)


def _average_on_every_step(context: DistContext, optimizer: torch.optim.Optimizer) -> None:
    synced = False  # by the step helper, since the last step

    def sync(opt: torch.optim.Optimizer) -> None:
        nonlocal synced
        all_reduce_mean_gradients(context, opt)
        synced = True

    def before_step(opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        nonlocal synced
        if not synced:
            all_reduce_mean_gradients(context, opt)
        synced = False

    set_gradient_sync(optimizer, sync)
    optimizer.register_step_pre_hook(before_step)


def all_reduce_mean_gradients(context: DistContext, optimizer: torch.optim.Optimizer) -> None:
    """Replace the gradients of `optimizer`'s parameters by their mean over the ranks.

    One all-reduce over one flat tensor: the gradients followed by one has-a-gradient flag per
    parameter. A parameter without a gradient on some rank counts as zero there (as in DDP); one
    without a gradient on every rank keeps `grad=None`, so the optimizer skips it as it would alone.
    """
    params = [p for group in optimizer.param_groups for p in group['params']]
    if not params:
        return
    dtype = params[0].dtype
    for p in params[1:]:
        dtype = torch.promote_types(dtype, p.dtype)
    parts = [(p.grad if p.grad is not None else torch.zeros_like(p)).detach().reshape(-1).to(context.device, dtype)
             for p in params]
    flags = torch.tensor([float(p.grad is not None) for p in params], dtype=dtype, device=context.device)
    flat = torch.cat([*parts, flags])
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    flat /= context.world_size
    has_grad = (flat[-len(params):] > 0).tolist()  # on some rank
    offset = 0
    for p, any_grad in zip(params, has_grad):
        size = p.numel()
        if any_grad:
            p.grad = flat[offset:offset + size].view_as(p).to(p.device, p.dtype).clone()
        offset += size


class Decision(NamedTuple):
    """What the run does at the top of its loop, the same on every rank."""

    signum: int  # a signal to checkpoint and stop on (0: none)
    stop: bool   # the evaluation reached the stop value
    save: bool   # a checkpoint is due


class Lockstep:
    """The learner processes in step: the same start, the same decisions at the top of the run loop (from
    the signals each caught, rank 0's evaluation, the checkpoint schedule), and every rank's own state
    (collector, feed, generators) in rank 0's checkpoint. A single process agrees with itself at no cost."""

    def __init__(self, context: DistContext) -> None:
        self.context = context
        self.signum: Optional[int] = None  # SIGTERM or SIGINT, caught by this process

    def rank_config(self, cfg: EasyDict) -> EasyDict:
        """The config of this rank: its own seed (rank 0 keeps the single process's)."""
        if self.context.is_main:
            return cfg
        return EasyDict({**cfg, 'seed': stream_seed(cfg.seed, DDP_STREAM, self.context.rank)})

    def env_budget(self, max_env_step: Optional[int], env_step: int) -> Optional[int]:
        """This rank's share of the env steps left from `env_step` (of all ranks) to `max_env_step` (None: no
        budget), rounded up: the ranks may overshoot by < 1 step each."""
        return None if max_env_step is None else -(-(max_env_step - env_step) // self.context.world_size)

    def catch_signals(self) -> Callable[[], None]:
        """Make SIGTERM (preemption) and SIGINT checkpoint and stop the run at the next decision (a second
        SIGINT stops at once); returns what puts the previous handlers back. Only the main thread can."""
        return catch_signals([self])

    def start(self, views: PolicyViews) -> None:
        """Every rank starts from rank 0's weights, and every optimizer step averages the ranks' gradients."""
        if self.context.enabled:
            views.learn.load_state_dict(broadcast_state(self.context, views.learn.state_dict()))
            average_gradients(self.context, learn_optimizers(views))

    def decide(self, evaluate: Callable[[], bool], checkpoint_due: Callable[[], bool],
               local_env_step: int) -> Decision:
        """Evaluate when due (`evaluate()` returns True when the stop value is reached) and agree: a signal to
        any rank stops all, rank 0's evaluation decides the stop. One process handles a signal before an
        evaluation starts; the ranks must have collected equally many env steps each."""
        signum = self.signum
        if not self.context.enabled:
            if signum is not None:
                return Decision(signum, False, False)
            stop = evaluate()
            return Decision(0, stop, not stop and checkpoint_due())
        any_signal, any_stop, any_save, most, minus_least = agree(self.context, [
            signum or 0, evaluate(), checkpoint_due(), local_env_step, -local_env_step])
        if most != -minus_least:  # each update averages over all ranks: they must collect in lockstep
            raise TidalError(f'the learner processes are out of step: they collected between {-minus_least:.0f} '
                             f'and {most:.0f} env steps each')
        return Decision(int(any_signal), bool(any_stop), bool(any_save))

    def gather(self, own_state: Callable[[], dict[str, Any]]) -> list[dict[str, Any]]:
        """The own state of ranks 1.. in rank order, on rank 0 (every rank must call it: it is collective);
        [] elsewhere and in a single process."""
        ranks = gather_to_main(self.context, None if self.context.is_main else own_state())
        return (ranks or [])[1:] if self.context.is_main else []

    def own_state(self, state: dict[str, Any]) -> dict[str, Any]:
        """This rank's own part of a checkpoint: rank 0's entries, or its entry under 'ranks'; a checkpoint
        of another number of processes is refused."""
        world_size = state.get('world_size', 1)
        if world_size != self.context.world_size:
            raise TidalError(f'this run was checkpointed by {world_size} learner process(es); resume it with as '
                             f'many (torchrun --nproc_per_node={world_size}), not {self.context.world_size}')
        return state if self.context.is_main else state['ranks'][self.context.rank - 1]


def catch_signals(locksteps: Sequence[Lockstep]) -> Callable[[], None]:
    """Make SIGTERM and SIGINT reach every lockstep (the runs of a seed group: each saves at its next decision and
    stops), a second SIGINT stop at once; returns what puts the previous handlers back. Only the main thread can."""
    def handle(signum: int, frame: Any) -> None:
        if signum == signal.SIGINT and any(lockstep.signum is not None for lockstep in locksteps):
            raise KeyboardInterrupt
        for lockstep in locksteps:
            lockstep.signum = signum
    return handle_signals(handle)


def handle_signals(handle: Callable[[int, Any], None]) -> Callable[[], None]:
    """`handle` for SIGTERM and SIGINT; returns what puts the previous handlers back. Only the main thread can
    set handlers: elsewhere nothing is set."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {signum: signal.signal(signum, handle) for signum in (signal.SIGTERM, signal.SIGINT)}

    def restore() -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return restore


class NullLogger:
    """The logger of ranks > 0: rank 0 alone writes the run folder."""

    def info(self, message: str) -> None: ...
    def exception(self, message: str, err: BaseException) -> None: ...
    def scalars(self, prefix: str, values: Any, env_step: int, train_iter: int) -> None: ...
    def evaluation(self, row: Any) -> None: ...
    def summary(self, values: Any) -> None: ...
    def close(self) -> None: ...

    def position(self, env_step: int) -> dict[str, int]:
        return {'env_step': env_step, 'text_bytes': 0, 'evals_bytes': 0}
