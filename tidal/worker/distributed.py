"""Several learner processes (DDP): the process group, identical starting weights and averaged gradients.

`torchrun --nproc_per_node=K -m tidal train CONFIG` starts K processes (ranks). Each collects from its
own seeds into its own buffers; every optimizer step of the policy first averages the gradients over
the ranks, so all ranks keep identical weights and an update equals one on the K batches together
(the mean of per-rank mean-loss gradients is the gradient of the mean loss over the concatenated
batch when the ranks' batches have the same size). Only rank 0 writes the run folder.

Policies own their optimizers and step them themselves (several per update, some with clipping), so
the averaging hooks into `Optimizer.step` (a step pre-hook) rather than wrapping a model: every
registered policy works unchanged. Gradient clipping inside a policy (PPO's `grad_clip_norm`) then
clips each rank's own gradient before the average, not the average.

A single process (no WORLD_SIZE, or WORLD_SIZE=1) creates no process group and pays nothing.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Sequence

import torch
import torch.distributed as dist

from tidal.base.errors import TidalError
from tidal.base.nest import to_cpu, tree_leaves, tree_replace

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
    rank, local_rank = int(os.environ.get('RANK', '0')), int(os.environ.get('LOCAL_RANK', '0'))
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


def find_optimizers(root: Any, max_depth: int = 4) -> list[torch.optim.Optimizer]:
    """Every torch optimizer reachable from `root`'s attributes (into lists, dicts and plain objects),
    each once, in a fixed order: a policy keeps its optimizers as attributes, some in a helper object."""
    found: list[torch.optim.Optimizer] = []
    seen: set[int] = set()

    def visit(obj: Any, depth: int) -> None:
        if id(obj) in seen or depth > max_depth:
            return
        seen.add(id(obj))
        if isinstance(obj, torch.optim.Optimizer):
            found.append(obj)
        elif isinstance(obj, (torch.Tensor, torch.nn.Module, str, bytes, int, float, bool, type(None))):
            return
        elif isinstance(obj, dict):
            for value in obj.values():
                visit(value, depth + 1)
        elif isinstance(obj, (list, tuple, set)):
            for value in obj:
                visit(value, depth + 1)
        elif hasattr(obj, '__dict__') and not isinstance(obj, type):
            for value in vars(obj).values():
                visit(value, depth + 1)

    visit(root, 0)
    return found


def average_gradients_on_step(context: DistContext, optimizer: torch.optim.Optimizer) -> None:
    """Make each `optimizer.step()` first replace its parameters' gradients by their mean over the ranks.

    One all-reduce per step, over one flat tensor: the gradients followed by one has-a-gradient flag
    per parameter. A parameter without a gradient on some rank counts as zero there (as in DDP); one
    without a gradient on every rank keeps `grad=None`, so the optimizer skips it as it would alone.
    """
    if not context.enabled:
        return

    def average(opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        params = [p for group in opt.param_groups for p in group['params']]
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

    optimizer.register_step_pre_hook(average)
