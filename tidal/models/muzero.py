"""MuZero's network (Schrittwieser et al. 2019, arXiv 1911.08265): representation, dynamics, prediction.

h maps an observation to a latent state s, g(s, a) gives the next latent and the transition's reward,
f(s) gives the policy, the value and (as ALF adds) whether the game is over. Nothing ties s to the
observation except the losses on what f and g predict along an unrolled action sequence; the optional
latent prediction loss (ALF's `train_repr_prediction`) also pulls g's latents towards h's of the real
next observations. Value and reward are categorical over a squashed support (appendix F), and every
latent is min-max scaled to [0, 1], the range of the one-hot action it is concatenated with (app. G).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Union

import torch
import torch.nn as nn
import torch.nn.functional as F

from tidal.base.errors import TidalError
from tidal.models.encoders import MLPEncoder, conv_layers, flat_dim_of, image_batch
from tidal.models.mlp import mlp
from tidal.registry import MODEL_REGISTRY
from tidal.rl_utils.value_transform import support_to_value, value_to_support

LATENT_RANGE_EPS = 1e-5  # smallest max - min a latent is divided by: a constant latent scales to 0


class MuZeroLossError(TidalError, ValueError):
    """calc_loss was asked for a term the model or the targets cannot provide."""


@dataclass(frozen=True)
class MuZeroOutput:
    """One step of the model on a batch of B: the latent and f's (and, after g, the reward's) logits."""

    latent: torch.Tensor  # [B, latent_size], in [0, 1] per sample when the model scales latents
    policy_logits: torch.Tensor  # [B, A]
    value_logits: torch.Tensor  # [B, 2 value_support_size + 1], over the squashed value
    reward_logits: Optional[torch.Tensor]  # [B, 2 reward_support_size + 1]; None at the initial step
    game_over_logit: Optional[torch.Tensor]  # [B]; None without a game-over head


@dataclass(frozen=True)
class MuZeroTargets:
    """Training targets of an unroll of K steps, each [B, K + 1, ...]; step 0 is the real observation."""

    value: torch.Tensor  # [B, K + 1] float, n-step returns in env units
    reward: torch.Tensor  # [B, K + 1] float, env units: reward of the transition into step k (step 0 unused)
    policy: torch.Tensor  # [B, K + 1, A] float, target action distribution (e.g. normalised visit counts)
    game_over: torch.Tensor  # [B, K + 1] bool
    beyond_episode_end: torch.Tensor  # [B, K + 1] bool, steps with no real observation: no policy or latent target
    latent: Optional[torch.Tensor] = None  # [B, K + 1, latent_size], h of the real observations, detached


def _stack_steps(logits: Sequence[Optional[torch.Tensor]], name: str) -> torch.Tensor:
    """The per-step `logits` of an unroll stacked to [B, steps, ...]; every step must have them."""
    present = [step for step in logits if step is not None]
    if len(present) != len(logits):
        raise MuZeroLossError(f'{len(logits) - len(present)} of {len(logits)} model outputs have no {name}')
    return torch.stack(present, dim=1)


def min_max_scale(latent: torch.Tensor) -> torch.Tensor:
    """(s - min s) / (max s - min s) per sample (MuZero app. G); a (near-)constant latent becomes ~0."""
    flat = latent.flatten(1)
    low = flat.amin(dim=1, keepdim=True)
    high = flat.amax(dim=1, keepdim=True)
    return ((flat - low) / (high - low).clamp_min(LATENT_RANGE_EPS)).view_as(latent)


class ResidualBlock(nn.Module):
    """relu(x + conv(relu(conv(x)))), two 3x3 convolutions that keep the shape (AlphaZero's block,
    without batch norm, so a search's batch of leaves never changes what the model predicts)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x + self.conv2(F.relu(self.conv1(x))))


class ConvRepresentation(nn.Module):
    """[B, H, W, C] images (any dtype) -> [B, latent_size]: conv layers, residual blocks, a linear map."""

    def __init__(self, obs_shape: Sequence[int], latent_size: int, channels: Sequence[int],
                 kernel_sizes: Sequence[int], strides: Sequence[int], num_res_blocks: int,
                 pixel_scale: float) -> None:
        super().__init__()
        if not channels:
            raise ValueError('conv_channels must name at least one conv layer: the residual blocks work on its '
                             'channels')
        layers, out_channels = conv_layers(int(obs_shape[2]), channels, kernel_sizes, strides)
        layers += [ResidualBlock(out_channels) for _ in range(num_res_blocks)]
        self.conv = nn.Sequential(*layers, nn.Flatten())
        self.linear = nn.Linear(flat_dim_of(self.conv, obs_shape), latent_size)
        self.pixel_scale = pixel_scale

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.linear(self.conv(image_batch(obs, self.pixel_scale)))


@MODEL_REGISTRY.register('muzero')
class MuZeroModel(nn.Module):
    """h, g and f of MuZero over a flat latent vector, for discrete actions (one-hot into g) or, with
    `continuous_actions`, for action vectors that g takes as they are (then f's policy head goes unused:
    neither a policy target nor a tree search exists for them).

    Images ([H, W, C] `obs_shape`) get a conv representation with residual blocks, vectors an MLP; g and
    f are MLPs with `hidden_sizes`. The value and reward output layers start at zero, so an untrained
    model predicts 0 for both (uniform support logits) instead of noise amplified by h^-1.
    """

    def __init__(self, obs_shape: Union[int, Sequence[int]], action_shape: int, latent_size: int = 64,
                 hidden_sizes: Sequence[int] = (64, 64), activation: str = 'relu',
                 conv_channels: Sequence[int] = (32,), conv_kernel_sizes: Sequence[int] = (3,),
                 conv_strides: Sequence[int] = (1,), num_res_blocks: int = 1, pixel_scale: float = 1.0,
                 value_support_size: int = 10, reward_support_size: int = 10, scale_latent: bool = True,
                 game_over_head: bool = True, continuous_actions: bool = False) -> None:
        super().__init__()
        self.action_dim, self.latent_size = int(action_shape), int(latent_size)  # continuous: the vector's size
        self.continuous_actions = continuous_actions
        self.value_support_size, self.reward_support_size = value_support_size, reward_support_size
        self.scale_latent = scale_latent
        # h: observation -> latent
        shape = [obs_shape] if isinstance(obs_shape, int) else list(obs_shape)
        if len(shape) == 1:
            encoder = MLPEncoder(int(shape[0]), hidden_sizes, activation)
            self.representation: nn.Module = nn.Sequential(encoder, nn.Linear(encoder.out_dim, latent_size))
        elif len(shape) == 3:
            self.representation = ConvRepresentation(shape, latent_size, conv_channels, conv_kernel_sizes,
                                                     conv_strides, num_res_blocks, pixel_scale)
        else:
            raise ValueError(f'cannot represent observations of shape {shape}: expected a vector (int or [n]) '
                             f'or an image [H, W, C]')
        # g: (latent, one-hot or continuous action) -> next latent, reward logits
        self.dynamics = mlp(latent_size + self.action_dim, hidden_sizes, activation=activation)
        dynamics_dim = hidden_sizes[-1] if hidden_sizes else latent_size + self.action_dim
        self.next_latent_head = nn.Linear(dynamics_dim, latent_size)
        self.reward_head = nn.Linear(dynamics_dim, 2 * reward_support_size + 1)
        # f: latent -> policy logits, value logits, game-over logit
        self.prediction = mlp(latent_size, hidden_sizes, activation=activation)
        prediction_dim = hidden_sizes[-1] if hidden_sizes else latent_size
        self.policy_head = nn.Linear(prediction_dim, self.action_dim)
        self.value_head = nn.Linear(prediction_dim, 2 * value_support_size + 1)
        self.game_over_head = nn.Linear(prediction_dim, 1) if game_over_head else None
        for head in (self.value_head, self.reward_head):
            nn.init.zeros_(head.weight)
            nn.init.zeros_(head.bias)

    def represent(self, obs: torch.Tensor) -> torch.Tensor:
        """h(o): the (scaled) latent [B, latent_size] of observations; also the target of the latent loss."""
        return self._scaled(self.representation(obs))

    def predict(self, latent: torch.Tensor) -> MuZeroOutput:
        """f(s) alone, on latents from anywhere (an exported model's prediction network)."""
        return self._predict(latent, reward_logits=None)

    def initial_inference(self, obs: torch.Tensor) -> MuZeroOutput:
        """h then f on real observations; there is no transition, so no reward."""
        return self._predict(self.represent(obs), reward_logits=None)

    def recurrent_inference(self, latent: torch.Tensor, action: torch.Tensor) -> MuZeroOutput:
        """g then f: the next latent after `action` ([B] long, or [B, action_dim] if continuous), its reward
        and f's outputs there."""
        if self.continuous_actions:
            action_input = action.to(latent.dtype).reshape(latent.shape[0], self.action_dim)
        else:
            action_input = F.one_hot(action.long(), self.action_dim).to(latent.dtype)
        features = self.dynamics(torch.cat([latent, action_input], dim=-1))
        next_latent = self._scaled(self.next_latent_head(features))
        return self._predict(next_latent, reward_logits=self.reward_head(features))

    def value(self, output: MuZeroOutput) -> torch.Tensor:
        """The predicted value [B] in env units."""
        return support_to_value(output.value_logits, self.value_support_size)

    def reward(self, output: MuZeroOutput) -> torch.Tensor:
        """The predicted reward [B] in env units; 0 for an initial step, which has no transition."""
        if output.reward_logits is None:
            return output.value_logits.new_zeros(output.value_logits.shape[0])
        return support_to_value(output.reward_logits, self.reward_support_size)

    def value_error(self, outputs: Sequence[MuZeroOutput], target_value: torch.Tensor) -> torch.Tensor:
        """|predicted value - target| [B, K + 1] in env units along an unroll (targets [B, K + 1]): 0 for a
        perfect prediction, unlike the value cross-entropy, whose floor is the two-hot target's own entropy."""
        value = torch.stack([self.value(out) for out in outputs], dim=1)
        return (value - target_value).abs()

    @torch.no_grad()
    def recurrent_fn(self, latent: torch.Tensor, action: torch.Tensor
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, Optional[torch.Tensor]]:
        """The search's `RecurrentFn`: (next latent, reward [B], policy logits [B, A], value [B], game-over logit
        [B] or None without a game-over head)."""
        if self.continuous_actions:
            raise TidalError('tree search expands one child per discrete action; this MuZero model takes '
                             'continuous actions')
        output = self.recurrent_inference(latent, action)
        return output.latent, self.reward(output), output.policy_logits, self.value(output), output.game_over_logit

    def calc_loss(self, outputs: Sequence[MuZeroOutput], targets: MuZeroTargets, train_value: bool = True,
                  train_reward: bool = True, train_policy: bool = True, train_game_over: bool = True,
                  train_repr_prediction: bool = False, weight: Optional[torch.Tensor] = None
                  ) -> dict[str, torch.Tensor]:
        """MuZero's loss over an unroll (eq. 1): each enabled term [B, K + 1], and 'loss', a scalar.

        `outputs` are initial_inference's output then K recurrent_inference ones. 'loss' sums the terms
        over steps, steps 1..K weighted 1/K (app. G), and averages over the batch, each sample weighted by
        `weight` [B] (importance weights of prioritized replay) when given.
        """
        num_steps = targets.value.shape[1]
        if len(outputs) != num_steps:
            raise MuZeroLossError(f'{len(outputs)} model outputs for targets of {num_steps} steps (K + 1)')
        terms: dict[str, torch.Tensor] = {}
        if train_value:  # cross-entropy against the two-hot support of the squashed return
            value_logits = torch.stack([out.value_logits for out in outputs], dim=1)
            terms['value'] = _cross_entropy(value_logits, value_to_support(targets.value, self.value_support_size))
        if train_reward:  # the same at steps 1..K; step 0 has no transition
            reward = targets.value.new_zeros(targets.value.shape)
            if num_steps > 1:
                reward_logits = _stack_steps([out.reward_logits for out in outputs[1:]], 'reward_logits')
                support = value_to_support(targets.reward[:, 1:], self.reward_support_size)
                reward = torch.cat([reward[:, :1], _cross_entropy(reward_logits, support)], dim=1)
            terms['reward'] = reward
        if train_policy and self.continuous_actions:
            raise MuZeroLossError('train_policy needs discrete actions: a continuous-action model has no policy target')
        if train_policy:  # cross-entropy against the search's policy, none past the episode's end
            policy_logits = torch.stack([out.policy_logits for out in outputs], dim=1)
            policy = _cross_entropy(policy_logits, targets.policy)
            terms['policy'] = policy.masked_fill(targets.beyond_episode_end, 0.0)
        if train_game_over:
            if self.game_over_head is None:
                raise MuZeroLossError('train_game_over needs a model built with game_over_head=True')
            logits = _stack_steps([out.game_over_logit for out in outputs], 'game_over_logit')
            terms['game_over'] = F.binary_cross_entropy_with_logits(logits, targets.game_over.to(logits.dtype),
                                                                    reduction='none')
        if train_repr_prediction:  # g's latents should match h's of the real observations
            if targets.latent is None:
                raise MuZeroLossError('train_repr_prediction needs targets.latent (h of the real observations)')
            latent = torch.stack([out.latent for out in outputs], dim=1)
            latent_error = (latent - targets.latent).pow(2).flatten(2).mean(dim=2)
            terms['latent'] = latent_error.masked_fill(targets.beyond_episode_end, 0.0)  # no observation there
        step_weight = targets.value.new_full((num_steps,), 1.0 / max(num_steps - 1, 1))
        step_weight[:1].fill_(1.0)  # a fill, not a copy of a host scalar: no wait for the device
        total = sum(terms.values(), targets.value.new_zeros(targets.value.shape))
        per_sample = (total * step_weight).sum(dim=1)
        if weight is not None:
            per_sample = per_sample * weight
        return {**terms, 'loss': per_sample.mean()}

    def _scaled(self, latent: torch.Tensor) -> torch.Tensor:
        return min_max_scale(latent) if self.scale_latent else latent

    def _predict(self, latent: torch.Tensor, reward_logits: Optional[torch.Tensor]) -> MuZeroOutput:
        """f(s), packed with s and g's reward logits."""
        features = self.prediction(latent)
        game_over = None if self.game_over_head is None else self.game_over_head(features).squeeze(-1)
        return MuZeroOutput(latent, self.policy_head(features), self.value_head(features), reward_logits, game_over)


def _cross_entropy(logits: torch.Tensor, target_probs: torch.Tensor) -> torch.Tensor:
    """-sum_i p_i log softmax(logits)_i over the last dim."""
    return -(target_probs * logits.log_softmax(dim=-1)).sum(dim=-1)
