"""Batched MuZero tree search (Schrittwieser et al. 2019, arXiv 1911.08265, appendix B "Search").

AlphaZero's MCTS run inside a learned model: a node is a latent state, an edge's reward is predicted,
and Q values are rescaled to [0, 1] by the min-max seen in each tree. One call searches B roots (all
collector envs, or a reanalyze batch): each simulation descends all B trees, calls the model once on
the B leaves and backs up the B paths. Python loops over simulations only: the descent and the backup
run in compiled kernels (`tidal.mcts.kernels`) over all trees and depths. The search knows no policy:
it sees the model only through `recurrent_fn`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import torch
import torch.nn.functional as F

from tidal.base.errors import TidalError
from tidal.mcts import kernels
from tidal.mcts.tree import Tree

# (latent [N, *latent_shape], action [N] long) -> (next latent [N, ...], reward [N], policy logits [N, A], value [N],
# game-over logit [N] or None for a model that does not predict game over)
RecurrentFn = Callable[[torch.Tensor, torch.Tensor],
                       tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, Optional[torch.Tensor]]]


class SearchError(TidalError, ValueError):
    """The inputs of a search do not fit together, or leave a root without a legal action."""


@dataclass(frozen=True)
class SearchConfig:
    num_simulations: int = 50  # simulations per search, each adding one node to every tree
    discount: float = 0.997  # per-step discount of the backed-up returns
    pb_c_base: float = 19652.0  # c2 of pUCT: visits at which the exploration weight starts to grow
    pb_c_init: float = 1.25  # c1 of pUCT: the exploration weight of a node with few visits
    dirichlet_alpha: float = 0.25  # concentration of the root noise (smaller = spikier)
    root_exploration_fraction: float = 0.25  # share of the root prior replaced by the noise
    # floor of the min-max range Q is normalised by (LightZero's value_delta_max): Q values closer than this,
    # e.g. a fresh model's, stay close instead of being stretched to [0, 1]; 0 = the paper's normalisation
    min_max_delta: float = 0.01
    # a node whose game-over logit exceeds game_over_logit_threshold stays a leaf: never expanded, each visit backs
    # up its own predicted value again (ALF's MCTS). Not at the root, a real observation. Needs game-over logits
    stop_at_predicted_game_over: bool = False
    game_over_logit_threshold: float = 1.0  # ALF's: game over where the predicted probability exceeds 0.73

    def __post_init__(self) -> None:
        if self.num_simulations < 0:
            raise SearchError(f'num_simulations must be >= 0, got {self.num_simulations}')
        if self.min_max_delta < 0:
            raise SearchError(f'min_max_delta must be >= 0, got {self.min_max_delta}')


@dataclass(frozen=True)
class SearchResult:
    visit_counts: torch.Tensor  # [B, A] float32, visits of each root action
    root_value: torch.Tensor  # [B] float32, the root's mean value: see `Tree.root_statistics`
    q_values: torch.Tensor  # [B, A] float32, mean discounted return of each root action (0 where unvisited)


def search(root_latent: torch.Tensor, root_logits: torch.Tensor, root_value: torch.Tensor, recurrent_fn: RecurrentFn,
           config: SearchConfig, legal_mask: Optional[torch.Tensor] = None, add_noise: bool = True,
           generator: Optional[torch.Generator] = None) -> SearchResult:
    """Search B roots given the model's output on them (latent, policy logits [B, A], value [B]).

    `legal_mask` [B, A] bool (None = all legal) restricts the root only. With `add_noise` the root
    prior is mixed with Dirichlet noise drawn from `generator` (torch's default one when None).
    Results are float32 tensors on the device of `root_logits`.
    """
    tree = expand_root(root_latent, root_logits, root_value, config, legal_mask, add_noise, generator)
    with torch.no_grad():  # once for the loop: entering it per simulation costs a few microseconds each
        for _ in range(config.num_simulations):
            _simulate(tree, recurrent_fn, config)
    visit_counts, mean_value, q_values = tree.root_statistics()
    to_tensor = lambda array: torch.from_numpy(array).to(root_logits.device, torch.float32)  # noqa: E731
    return SearchResult(to_tensor(visit_counts), to_tensor(mean_value), to_tensor(q_values))


@torch.no_grad()
def expand_root(root_latent: torch.Tensor, root_logits: torch.Tensor, root_value: torch.Tensor, config: SearchConfig,
                legal_mask: Optional[torch.Tensor] = None, add_noise: bool = True,
                generator: Optional[torch.Generator] = None) -> Tree:
    """A tree per root, each with its prior: softmax over the legal actions, then the exploration noise."""
    batch_size, num_actions = root_logits.shape
    if root_latent.shape[0] != batch_size or root_value.shape != (batch_size, ):
        raise SearchError(f'root_latent {tuple(root_latent.shape)}, root_logits {tuple(root_logits.shape)} and '
                          f'root_value {tuple(root_value.shape)} must share the batch size B (value: [B])')
    logits = root_logits.detach().to('cpu', torch.float64)
    legal = None
    if legal_mask is not None:
        legal = legal_mask.detach().to('cpu', torch.bool).numpy()
        if legal.shape != (batch_size, num_actions):
            raise SearchError(f'legal_mask has shape {legal.shape}, the logits {(batch_size, num_actions)}')
        if not legal.any(axis=1).all():
            raise SearchError(f'legal_mask row {int(np.flatnonzero(~legal.any(axis=1))[0])} has no legal action; '
                              f'every root needs at least one')
        logits = logits.masked_fill(~torch.from_numpy(legal), -np.inf)
    prior = torch.softmax(logits, dim=1).numpy()
    if add_noise:
        prior = _mix_dirichlet_noise(prior, legal, config, generator)
    value = root_value.detach().to('cpu', torch.float64).numpy()
    return Tree(root_latent.detach(), prior, value, config.num_simulations, legal, config.min_max_delta)


@torch.no_grad()
def simulate(tree: Tree, recurrent_fn: RecurrentFn, config: SearchConfig) -> None:
    """One simulation on every tree: select a leaf edge, expand it with one model call, back up."""
    _simulate(tree, recurrent_fn, config)


def _simulate(tree: Tree, recurrent_fn: RecurrentFn, config: SearchConfig) -> None:
    leaf_rows, leaf_actions = tree.select(config.pb_c_init, config.pb_c_base)
    latent, reward, logits, value, game_over_logit = recurrent_fn(*tree.leaf_inputs(leaf_rows, leaf_actions))
    game_over = None
    if config.stop_at_predicted_game_over:
        if game_over_logit is None:
            raise SearchError('stop_at_predicted_game_over needs a recurrent_fn that predicts game over (a game-over '
                              'logit as its fifth output); this one returns None')
        game_over = _to_host(game_over_logit).reshape(-1) > config.game_over_logit_threshold
    tree.expand_and_backup(latent, _to_host(reward).reshape(-1), _to_host(value).reshape(-1), _to_host(logits),
                           config.discount, game_over)


def visit_policy(visit_counts: torch.Tensor, temperature: float) -> torch.Tensor:
    """Acting probabilities [B, A] from root visits: N(a)^(1/T) / sum_b N(b)^(1/T) (MuZero app. D).

    T = 0 is the one-hot argmax (ties: lowest index). Counts are divided by their row's maximum before
    the power, so small temperatures cannot overflow.
    """
    if temperature < 0:
        raise SearchError(f'temperature must be >= 0, got {temperature}')
    counts = visit_counts.to(torch.float32)
    if temperature == 0:
        return F.one_hot(counts.argmax(dim=-1), counts.shape[-1]).to(torch.float32)
    scaled = (counts / counts.amax(dim=-1, keepdim=True)).pow(1.0 / temperature)
    return scaled / scaled.sum(dim=-1, keepdim=True)


def _mix_dirichlet_noise(prior: np.ndarray, legal: Optional[np.ndarray], config: SearchConfig,
                         generator: Optional[torch.Generator]) -> np.ndarray:
    """(1 - frac) prior + frac Dirichlet(alpha) over each root's legal actions (MuZero pseudocode).

    Normalised Gamma(alpha) draws are Dirichlet; numpy draws them from a seed taken from `generator`,
    so a seeded generator reproduces the noise. A row whose draws all underflow gets uniform noise.
    """
    seed = int(torch.randint(2**62, (), generator=generator))
    gamma = np.random.default_rng(seed).standard_gamma(config.dirichlet_alpha, size=prior.shape)
    illegal = np.zeros(prior.shape, dtype=bool) if legal is None else ~legal
    prior = np.array(prior, dtype=np.float64)
    kernels.mix_noise(prior, gamma, illegal, config.root_exploration_fraction)
    return prior


def _to_host(tensor: torch.Tensor) -> np.ndarray:
    """A model output as a numpy array in float32 or float64 (the dtypes the kernels take): a view if it can be."""
    if tensor.device.type == 'cpu' and tensor.dtype in _KERNEL_DTYPES and not tensor.requires_grad:
        return tensor.numpy()  # the common case, in a third of the torch calls of the general one
    return tensor.detach().to('cpu', torch.float64).numpy()


_KERNEL_DTYPES = (torch.float32, torch.float64)
