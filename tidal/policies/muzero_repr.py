"""A MuZero model as the representation of another RL algorithm (ALF's MuzeroRepresentationLearner).

The model's h maps each observation o to a latent s = h(o) (MuZero, arXiv 1911.08265; as a learned
representation, MuZero Unplugged, arXiv 2104.06294); a registered policy (`rl_type`: PPO or SAC), held by
this one, acts and learns on s instead of o. The model learns from MuZero's own losses (value, reward, game
over, optionally reanalyzed policy) on its own replay of raw observations and its own schedule, both kept by
the 'repr' feed (`tidal.worker.feeds.repr`), which runs the held policy's feed beside them. Every batch is
encoded again with the current h when it is used, so stored data never holds stale latents.

The defaults are ALF's: the held policy's losses reach h too (`repr.encoder_grad`; in ALF h is one of the
agent's modules that the RL loss trains), and the model's updates come after training iterations of the held
policy (`repr.training`: one collection and its learn updates, ALF's `after_train_iter`), with the sizes of
ALF's `MuzeroRepresentationTrainingOptions`.

The config holds the keys of both policies (`config_owners`), the held one's first so that this one's win.
"""
from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any, Iterable, Mapping, Optional

import torch
import torch.nn as nn
from easydict import EasyDict

from tidal.base.device import policy_device
from tidal.base.errors import ConfigError
from tidal.base.modes import EnvLayout, ReprView, Timestep
from tidal.models.acting import ActingNetwork, Encoded
from tidal.models.muzero import MuZeroModel
from tidal.policies import discrete_sac, ppo, sac  # noqa: F401 -- registers the policies of RL_TYPES
from tidal.policies.base import MODES, Policy
from tidal.policies.common import split_action_mask
from tidal.policies.muzero_learner import RepresentationOptions, search_config
from tidal.policies.muzero_repr_training import ModelSteps, ReprTraining
from tidal.registry import POLICY_REGISTRY

RL_TYPES = ('ppo', 'discrete_sac', 'sac')  # the policies that can learn on the latent


def wrapped_policy_class(policy_cfg: Mapping[str, Any]) -> type[Policy]:
    """The registered class of the policy that `policy_cfg`'s `rl_type` names (default: PPO)."""
    rl_type = policy_cfg.get('rl_type', MuZeroReprPolicy.config['rl_type'])
    if rl_type not in RL_TYPES:
        raise ConfigError(f"config key 'policy.rl_type' must be one of {', '.join(map(repr, RL_TYPES))} "
                          f'(the policy that learns on the latent), got {rl_type!r}')
    cls: type[Policy] = POLICY_REGISTRY.get(rl_type)
    return cls


@POLICY_REGISTRY.register('muzero_repr')
class MuZeroReprPolicy(RepresentationOptions, Policy):
    pipeline = 'repr'  # the held policy's feed, with the model's replay and updates beside it
    remote_collect = False  # the raw steps for the model's replay wait in the collect mode for the feed

    config = dict(
        type='muzero_repr',
        # (str in {'ppo', 'discrete_sac', 'sac'}) The registered policy that acts and learns on s = h(o); its
        # keys (learn, collect, model, ...) are this policy's too, and its feed runs the training (beside the
        # model's replay and updates: the 'repr' feed).
        rl_type='ppo',
        repr=dict(
            # (bool) Train f's policy on reanalyze's visit distribution: no search acts here, so it needs
            # reanalyze_ratio=1.
            train_policy=False,
            # (float in [0, 1]) Discount of the model's n-step value targets (and of reanalyze's search).
            discount_factor=0.99,
            # (bool) Let the wrapped policy's losses train h too (an Adam over h's parameters with
            # repr.learning_rate), as ALF does; False trains h on MuZero's losses alone.
            encoder_grad=True,
            model=dict(
                # (int > 0) Size of the latent s = h(o): the wrapped policy's observation size.
                latent_size=64,
                # (list[int > 0]) Hidden layer sizes of h (vector observations), g and f.
                hidden_sizes=[64, 64],
                # (int > 0) Value support: 2 n + 1 atoms over the squashed value h(v) in [-n, n]; 15 covers
                # returns up to about 240 (CartPole's reach 100 at discount 0.99).
                value_support_size=15,
                # (int > 0) Reward support, the same over the squashed reward.
                reward_support_size=5,
                # (bool) f also predicts whether the game is over (for repr.train_game_over_function).
                game_over_head=True,
            ),
            # the model's own replay and schedule; the defaults are ALF's MuzeroRepresentationTrainingOptions
            training=dict(
                # (int > 0) Update the model after every this many of the wrapped policy's training iterations
                # (or learn updates: interval_unit).
                interval=1,
                # (str in {'train_iter', 'learn_update'}) What interval counts: 'train_iter', steps of the wrapped
                # policy's feed (one collection and its learn updates: a rollout and its epochs, or a collection
                # and its update_per_collect updates; a warm-up collection too), the model updating after the
                # step, as ALF's after_train_iter; 'learn_update', the wrapped policy's minibatch updates, the
                # model updating inside the last one.
                interval_unit='train_iter',
                # (int > 0) Sequences sampled per model update.
                mini_batch_size=256,
                # (int > 0) Consecutive unroll starts per sequence (each a sample of its own; capped at its
                # env's newest step).
                mini_batch_length=1,
                # (int > 0) Model updates each time the interval comes round.
                num_updates_per_train_iter=10,
                # (int > 0) Env steps the model's replay keeps (over all collector envs).
                replay_buffer_length=100_000,
                # (int >= 0) Env steps in the model's replay before its first update.
                initial_collect_steps=2000,
                # (bool) Sample the model's replay by each start's value error (prioritized replay).
                priority=True,
                # (float >= 0) Priority exponent of the model's replay (0 = uniform).
                priority_alpha=1.2,
                # (float in [0, 1]) Importance-sampling exponent of the model's replay (0 = no correction).
                priority_beta=0.0,
            ),
        ),
    )

    @classmethod
    def config_owners(cls, cfg: Mapping[str, Any]) -> tuple[type, ...]:
        """The held policy's owners, then this class's own (RepresentationOptions, this one), whose keys win."""
        inner = wrapped_policy_class(cfg).config_owners(cfg)
        return inner + tuple(owner for owner in super().config_owners(cfg) if owner not in inner)

    @classmethod
    def action_space_of(cls, cfg: Mapping[str, Any]) -> Optional[str]:
        """The held policy's: it chooses the actions."""
        return wrapped_policy_class(cfg).action_space_of(cfg)

    @classmethod
    def default_model(cls, cfg: Mapping[str, Any]) -> tuple[str, list[str]]:
        """The model of the held `rl_type` policy, which acts on the latent."""
        return wrapped_policy_class(cfg).default_model(cfg)

    def __init__(self, cfg: dict, model: Optional[nn.Module] = None, enable_field: Iterable[str] = MODES) -> None:
        """`model`, if given, is the held policy's; the MuZero model is always built from policy.repr.model."""
        policy_cfg = EasyDict(cfg)
        check_wrapped_options(policy_cfg)
        inner_cls = wrapped_policy_class(policy_cfg)
        continuous = inner_cls.action_space == 'continuous' or policy_cfg.model.get('action_space') == 'continuous'
        self._repr_model = build_repr_model(policy_cfg, continuous).to(policy_device(policy_cfg))
        # the held policy's model sees latents, not observations; it makes its modes now, so its draws from
        # the global generator come before this policy's own seeds (_init_learn, _init_collect)
        inner_cfg = EasyDict(copy.deepcopy(policy_cfg))
        inner_cfg.model.obs_shape = policy_cfg.repr.model.latent_size
        inner_cfg.eval = policy_cfg.eval  # one eval section: eval.deterministic set on this policy reaches the held one
        self._inner = inner_cls(inner_cfg, model, enable_field)
        self._collect_latent: Optional[tuple[Any, Any]] = None  # (obs, encoded obs) of the latest action
        self._model_steps = ModelSteps(self._repr_model)  # raw steps for the model's replay
        super().__init__(policy_cfg, nn.ModuleDict({'repr': self._repr_model, 'rl': self._inner.model}), enable_field)

    @property
    def inner(self) -> Policy:
        """The held policy (`rl_type`), which acts and learns on the latent."""
        return self._inner

    def extra_views(self) -> dict[str, Any]:
        """The held policy's views and 'repr': what the 'repr' feed needs to keep the model's replay and
        schedule its updates."""
        training = self._training
        view = ReprView(replay_seed=self._buffer_seed, collected=self._model_steps.take, make_batch=training.make_batch,
                        train=training.train, schedule=training.schedule)
        return {**self._inner.extra_views(), 'repr': view}

    # ----- encoding --------------------------------------------------------------------------
    def _encode(self, obs: Any, grad: bool = False) -> tuple[Any, torch.Tensor]:
        """(obs with its observation replaced by s = h(o), s); an action mask stays as it is."""
        observation, _ = split_action_mask(obs)
        with torch.set_grad_enabled(grad):
            latent = self._repr_model.represent(observation)
        return with_observation(obs, latent), latent

    def _encoded(self, obs: Any) -> Any:
        return self._encode(obs)[0]

    # ----- learn mode ------------------------------------------------------------------------
    def _init_learn(self) -> None:
        self._rl_learn = self._inner.learn_mode
        seed = int(torch.randint(2**62, ()))  # from the run's seeded generator: the same run, the same samples
        search_cfg = search_config(self._cfg.search, self._cfg.repr.discount_factor)
        self._training = ReprTraining(self._repr_model, self._cfg.repr, search_cfg, self._device, seed,
                                      self._compiled)

    def _forward_learn(self, batch: dict[str, Any]) -> dict[str, Any]:
        # 1. the held policy's update on the latents of the batch, encoded by the current h
        inner_batch = dict(batch)
        if 'next_obs' in batch:  # s' only enters targets: never a path into h
            inner_batch['next_obs'] = self._encoded(batch['next_obs'])
        if self._training.encoder_optimizer is None:
            inner_batch['obs'] = self._encoded(batch['obs'])
            info = self._rl_learn.forward(inner_batch)
        else:
            # h runs once; the held policy sees a leaf copy of s, whose gradient flows through h in one step
            _, latent = self._encode(batch['obs'], grad=True)
            leaf = latent.detach().requires_grad_(True)
            inner_batch['obs'] = with_observation(batch['obs'], leaf)
            info = self._rl_learn.forward(inner_batch)
            self._training.step_encoder(latent, leaf)
        # 2. the MuZero model's own updates due now, and the values of those not yet reported
        self._training.after_learn_update(info)
        return info

    def _monitor_vars_learn(self) -> list[str]:
        return self._rl_learn.monitor_vars() + self._training.monitor_vars()

    def _state_dict_learn(self) -> dict[str, Any]:
        return {**self._rl_learn.state_dict(), **self._training.state_dict()}

    def _load_state_dict_learn(self, state: dict[str, Any]) -> None:
        self._rl_learn.load_state_dict(state)
        self._training.load_state_dict(state)

    def _reset_learn(self) -> None:
        self._rl_learn.reset()

    def _optimizers_learn(self) -> list[torch.optim.Optimizer]:
        return [*self._rl_learn.optimizers(), *self._training.optimizers()]

    def running_statistics(self) -> dict[str, Any]:
        return self._inner.running_statistics()

    def weights(self) -> dict[str, Any]:
        return {**self._inner.weights(), 'repr': {'model': self._repr_model.state_dict()}}

    def load_weights(self, state: dict[str, Any]) -> None:
        """The held policy's networks and the MuZero model (learn state's 'repr')."""
        self._inner.load_weights(state)
        self._repr_model.load_state_dict(state['repr']['model'])

    # ----- collect mode ----------------------------------------------------------------------
    def _init_collect(self) -> None:
        self._rl_collect = self._inner.collect_mode
        self._buffer_seed = int(torch.randint(2**62, ()))

    def _collect_input(self, obs: Any) -> Any:
        """The encoded obs the held policy acts on, kept for the transition of this step."""
        encoded = self._encoded(obs)
        self._collect_latent = (obs, encoded)
        return encoded

    def _forward_collect(self, obs: Any, **kwargs: Any) -> dict[str, Any]:
        return self._rl_collect.forward(self._collect_input(obs), **kwargs)

    def _random_action(self, obs: Any) -> dict[str, Any]:
        return self._rl_collect.random_action(self._collect_input(obs))

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Timestep) -> dict[str, Any]:
        cached = self._collect_latent
        encoded = cached[1] if cached is not None and cached[0] is obs else self._encoded(obs)
        columns = self._rl_collect.process_transition(encoded, policy_output,
                                                      replace(timestep, next_obs=self._encoded(timestep.next_obs)))
        # the held policy stores raw observations: learning encodes them with the h of its time
        columns['obs'] = obs
        if 'next_obs' in columns:
            columns['next_obs'] = timestep.next_obs
        columns.update(self._model_steps.columns(timestep))
        return columns

    def _get_train_sample(self, transitions: dict[str, Any], layout: EnvLayout) -> dict[str, Any]:
        """The raw steps are set aside for the model's replay (the 'repr' view's `collected`); the held policy
        makes its samples from the latents, which are then swapped back for the raw observations."""
        self._model_steps.set_aside(transitions)
        raw = {key: transitions[key] for key in ('obs', 'next_obs') if key in transitions}
        transitions.update({key: self._encoded(value) for key, value in raw.items()})
        sample = self._rl_collect.get_train_sample(transitions, layout)
        sample.update({key: value for key, value in raw.items() if key in sample})
        return sample

    def _reset_collect(self, env_ids: Optional[Iterable[int]] = None) -> None:
        self._rl_collect.reset(env_ids)

    def _state_dict_collect(self) -> dict[str, Any]:
        return self._rl_collect.state_dict()

    def _load_state_dict_collect(self, state: dict[str, Any]) -> None:
        self._rl_collect.load_state_dict(state)

    # ----- eval mode -------------------------------------------------------------------------
    def _init_eval(self) -> None:
        self._rl_eval = self._inner.eval_mode

    def _forward_eval(self, obs: Any) -> dict[str, Any]:
        return self._rl_eval.forward(self._encoded(obs))

    def _reset_eval(self, env_ids: Optional[Iterable[int]] = None) -> None:
        self._rl_eval.reset(env_ids)

    def _seed_eval(self, seed: int) -> None:
        self._rl_eval.seed(seed)  # the held policy acts, on its own eval.deterministic

    def export_actor(self, action_mask: bool = False) -> ActingNetwork:
        """The held policy's acting network on s = h(o)."""
        inner = self._inner.export_actor(action_mask)
        return ActingNetwork(Encoded(self._repr_model.represent, self._repr_model, inner), inner.input_names,
                             inner.output_names, note=inner.note, eval_overrides=inner.eval_overrides)


def with_observation(obs: Any, observation: torch.Tensor) -> Any:
    """`obs` with its observation part replaced (a dict keeps its action mask)."""
    return {**obs, 'observation': observation} if isinstance(obs, dict) else observation


def check_wrapped_options(cfg: EasyDict) -> None:
    """Settings that cannot work on a latent, or that the model cannot learn from here."""
    repr_cfg = cfg.repr
    if cfg.get('multi_agent'):
        raise ConfigError('policy.multi_agent=True cannot work under muzero_repr: its MuZero model sees one '
                          'agent; set it False')
    if repr_cfg.reanalyze_ratio not in (0, 1):
        raise ConfigError(f'policy.repr.reanalyze_ratio must be 0 or 1 under muzero_repr (all or none of the '
                          f'samples reanalyzed), got {repr_cfg.reanalyze_ratio}')
    if repr_cfg.train_policy and repr_cfg.reanalyze_ratio < 1:
        raise ConfigError('policy.repr.train_policy=True needs policy.repr.reanalyze_ratio=1: no search acts '
                          'here, so reanalyze gives the only policy targets')
    if cfg.get('normalize', {}).get('obs'):
        raise ConfigError('policy.normalize.obs=True cannot work under muzero_repr: the wrapped policy sees the '
                          'latent h(o), already scaled to [0, 1] and changing as h learns; set it False')
    if cfg.get('learn', {}).get('value_target', 'gae') != 'gae':
        raise ConfigError(f"policy.learn.value_target='{cfg.learn.value_target}' cannot work under muzero_repr: "
                          f"its rollouts are learnt on the latent as collected; set it to 'gae'")
    if cfg.model.get('obs_shape') is None or cfg.model.get('action_shape') is None:
        raise ConfigError('policy.model.obs_shape and policy.model.action_shape must be set (compile_config '
                          'fills them from the env): the MuZero model is built for the env')


def build_repr_model(cfg: EasyDict, continuous_actions: bool) -> MuZeroModel:
    """The MuZero model of `policy.repr.model` for the env's observations and actions."""
    action_shape = cfg.model.action_shape
    action_size = int(torch.tensor(action_shape).prod()) if isinstance(action_shape, (list, tuple)) \
        else int(action_shape)
    return MuZeroModel(cfg.model.obs_shape, action_size, continuous_actions=continuous_actions, **cfg.repr.model)
