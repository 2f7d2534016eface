"""Config keys every maximum-entropy actor-critic shares: SAC with its variants, and TAAC.

Declared once here, so the keys, their defaults and their comments cannot drift apart between the
algorithms; each policy class lists this class before `Policy` and `class_defaults` merges it in.
"""
from __future__ import annotations

from tidal.base.defaults import FreeDict


class MaxEntropyActorCritic:
    """Soft Q critics with Polyak-averaged targets, a stochastic actor and an entropy temperature."""

    config: dict = dict(
        # (int >= 0) Env steps of uniform random actions before the first update; at most
        # other.replay_buffer.replay_buffer_size.
        random_collect_size=10000,
        model=FreeDict(
            # (bool) Two Q critics and the minimum of their values (clipped double Q).
            twin_critic=True,
        ),
        learn=dict(
            # (float > 0) Adam learning rate of the Q critics.
            learning_rate_q=3e-4,
            # (float > 0) Adam learning rate of the actor.
            learning_rate_policy=3e-4,
            # (float > 0) Adam learning rate of the temperatures (auto_alpha only).
            learning_rate_alpha=3e-4,
            # (float in (0, 1]) Polyak factor of the target networks: target += target_theta * (online - target).
            target_theta=0.005,
            # (float in [0, 1]) Discount factor gamma.
            discount_factor=0.99,
            # (float >= 0) Entropy temperature alpha of the actions; its initial value when auto_alpha is on
            # (then > 0: it is tuned from log(alpha)).
            alpha=0.2,
            # (bool) Tune the temperatures towards their target entropies (SAC v2) instead of keeping them fixed.
            auto_alpha=True,
            # (float or None) Target entropy of the actions for auto_alpha; None means -action_dim, the paper's
            # heuristic.
            target_entropy=None,
            # (float >= 0) Half-width of the uniform init of the actor's output layer (0: keep default init).
            init_w=3e-3,
        ),
    )
