"""What a policy is made of, declared once, each part under its checkpoint key: its networks, the target copies
of them, its learnable scalars (a temperature), optimizers, counters, random streams and the running statistics
acting updates.

Everything that handles a policy's parts reads them from here rather than from lists of its own that must agree:
the checkpoint (`learn_state`, `weights`), what a seed group stacks (`stacked`), what acting reads and weight
sync sends (`weights`: only the parts marked `acting`), the optimizers gradients are averaged for
(`optimizers`), and the train or eval mode of every module (`use_mode`). A policy declares a part where it builds
it:

    self._target_critic = self.parts.target('target_critic', TargetNetwork(self._model.critic))
    self._optimizer_q = self.parts.optimizer('optimizer_q', adam(self._model.critic.parameters(), lr))
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Protocol, TypeVar, Union

import torch
import torch.nn as nn

KINDS = ('network', 'target', 'scalar', 'optimizer', 'counter', 'stream', 'statistics')
T = TypeVar('T')


class Stateful(Protocol):
    """What a checkpoint keeps of a part: a module, an optimizer, a temperature, an update count."""

    def state_dict(self) -> Any: ...

    def load_state_dict(self, state: Any) -> Any: ...


@dataclass(frozen=True)
class Part:
    """One declared part: its checkpoint key, kind (one of KINDS), the object, and whether acting reads it."""

    key: str
    kind: str
    value: Any
    acting: bool = False
    saved: bool = True  # kept by the checkpoint (a network rebuilt from others before each use is not)


class RandomStream:
    """A torch.Generator as a part: its state is what a checkpoint keeps."""

    def __init__(self, generator: torch.Generator) -> None:
        self.generator = generator

    def state_dict(self) -> torch.Tensor:
        return self.generator.get_state()

    def load_state_dict(self, state: torch.Tensor) -> None:
        self.generator.set_state(state)


def _saved(part: Part) -> Stateful:
    """What a checkpoint keeps of `part`: a target network's copy, else the part itself."""
    return part.value.net if part.kind == 'target' else part.value


class Parts:
    """A policy's parts in the order they were declared; a key names one part."""

    def __init__(self) -> None:
        self._parts: dict[str, Part] = {}
        self._mode_flags: dict[Any, list[tuple[nn.Module, bool]]] = {}  # by a bool, or an optimizer's id

    def declare(self, key: str, kind: str, value: T, acting: bool = False, saved: bool = True) -> T:
        """Add `value` as a part of `kind` under `key`; returns `value`, so a declaration reads as an assignment."""
        if kind not in KINDS:
            raise ValueError(f"part '{key}': unknown kind '{kind}'; choose from {KINDS}")
        if key in self._parts:
            raise ValueError(f"part '{key}' is declared twice")
        self._parts[key] = Part(key, kind, value, acting, saved)
        self._mode_flags.clear()  # the modules of every mode, found again at its next use
        return value

    def network(self, key: str, module: T, acting: bool = False, saved: bool = True) -> T:
        return self.declare(key, 'network', module, acting, saved)

    def target(self, key: str, target: T) -> T:
        """A target copy of a network (`tidal.models.TargetNetwork`): saved as the copy's network."""
        return self.declare(key, 'target', target)

    def scalar(self, key: str, module: T, acting: bool = False) -> T:
        """A learnable scalar held by a module (a temperature); `acting` when collection and evaluation read it."""
        return self.declare(key, 'scalar', module, acting)

    def optimizer(self, key: str, optimizer: T) -> T:
        return self.declare(key, 'optimizer', optimizer)

    def counter(self, key: str, counter: T) -> T:
        """A count the update keeps (updates made, a schedule's clock), saved by its state_dict."""
        return self.declare(key, 'counter', counter)

    def stream(self, key: str, generator: torch.Generator) -> torch.Generator:
        """A random stream an update draws from (which samples to reanalyze): saved as the generator's state, so a
        resumed run draws what the run would have."""
        self.declare(key, 'stream', RandomStream(generator))
        return generator

    def statistics(self, key: str, statistics: T) -> T:
        """Running statistics that acting updates (an observation or return normaliser)."""
        return self.declare(key, 'statistics', statistics, acting=True)

    def include(self, other: Parts, leave_out: tuple[str, ...] = ()) -> None:
        """Declare here every part of `other` (a helper that keeps parts of its own) but those keyed `leave_out`."""
        for part in other:
            if part.key not in leave_out:
                self.declare(part.key, part.kind, part.value, part.acting, part.saved)

    def __iter__(self) -> Iterator[Part]:
        return iter(self._parts.values())

    def of(self, *kinds: str) -> dict[str, Any]:
        """The parts of `kinds`, by key, in declaration order."""
        return {part.key: part.value for part in self if part.kind in kinds}

    # ----- what follows from the declaration ---------------------------------------------------
    def weights(self) -> dict[str, Stateful]:
        """What acting reads (sent to Ray collectors and the acting copy, and the first entries of a checkpoint):
        the acting networks, scalars and statistics."""
        return {part.key: part.value for part in self if part.acting}

    def learn_state(self) -> dict[str, Stateful]:
        """What a checkpoint keeps of the learn mode besides `weights`: target networks (as their copies),
        learnable scalars, optimizers, counters and the networks acting does not read."""
        return {part.key: _saved(part) for part in self if not part.acting and part.saved}

    def state_dict(self) -> dict[str, Any]:
        """Every saved part's state under its key (a target network's as its copy's)."""
        return {part.key: _saved(part).state_dict() for part in self if part.saved}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for part in self:
            if part.saved:
                _saved(part).load_state_dict(state[part.key])

    def stacked(self) -> dict[str, nn.Module]:
        """Every module whose tensors an update reads or writes (networks, targets, scalars): a seed group stacks
        them over its seeds."""
        return {part.key: part.value for part in self if part.kind in ('network', 'target', 'scalar')}

    def optimizers(self) -> list[torch.optim.Optimizer]:
        return list(self.of('optimizer').values())

    def undeclared(self) -> Optional[str]:
        """A tensor a declared optimizer steps that no declared network, target or scalar holds, in words naming
        the optimizer and the tensor; None when every one is declared. Such a tensor would be left out of what the
        declaration derives: a seed group would not stack it, weight sync would not send it."""
        held = {id(tensor) for module in self.stacked().values() for tensor in module.parameters()}
        for key, optimizer in self.of('optimizer').items():
            for index, group in enumerate(optimizer.param_groups):
                for position, tensor in enumerate(group['params']):
                    if id(tensor) not in held:
                        return (f"optimizer '{key}' steps a tensor that no declared part holds (parameter "
                                f"{position} of its group {index}, shape {list(tensor.shape)})")
        return None

    # ----- train and eval modes ------------------------------------------------------------------
    def use_mode(self, learns: Union[bool, torch.optim.Optimizer]) -> None:
        """Train mode for what learns, eval mode for the rest, as BatchNorm and Dropout need. `True`: every
        declared network, target and scalar (an update); `False`: none (acting, a rollout's values, export); an
        optimizer: the modules whose parameters it steps (one loss stage), while what the stage only reads (a
        critic held constant under the actor's loss, the actor drawing the next actions of the critic's target,
        a target network) is read as acting reads it. A module without parameters of its own (Dropout) follows
        the module that holds it. Every flag is checked on every call (microseconds): another holder of the same
        modules (a wrapped policy's own parts) may have changed them since."""
        key = learns if isinstance(learns, bool) else id(learns)
        flags = self._mode_flags.get(key)
        if flags is None:
            flags = self._mode_flags[key] = self._flags(learns)
        for module, flag in flags:
            if module.training is not flag:
                module.__dict__['training'] = flag  # where nn.Module keeps the flag, without its __setattr__ checks

    def in_mode(self, fn: Callable[..., T], learns: bool) -> Callable[..., T]:
        """`fn` with the networks in train mode (`learns`: an update, a plan of one) or eval mode (acting)."""
        def call(*args: Any, **kwargs: Any) -> T:
            self.use_mode(learns)
            return fn(*args, **kwargs)
        return call

    def _flags(self, learns: Union[bool, torch.optim.Optimizer]) -> list[tuple[nn.Module, bool]]:
        """(module, training) for every module of the declared networks, targets and scalars under `learns`."""
        roots = self.stacked().values()
        if isinstance(learns, bool):
            return [(module, learns) for root in roots for module in root.modules()]
        stepped = {id(tensor) for group in learns.param_groups for tensor in group['params']}
        flags: list[tuple[nn.Module, bool]] = []

        def visit(module: nn.Module, holder_learns: bool) -> None:
            own = [id(tensor) for tensor in module.parameters()]
            learns_here = any(tensor in stepped for tensor in own) if own else holder_learns
            flags.append((module, learns_here))
            for child in module.children():
                visit(child, learns_here)

        for root in roots:
            visit(root, False)
        return flags
