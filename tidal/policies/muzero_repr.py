"""A MuZero model as the representation of another RL algorithm (ALF's MuzeroRepresentationLearner).

The model's h maps each observation o to a latent s = h(o) (MuZero, arXiv 1911.08265; as a learned
representation, MuZero Unplugged, arXiv 2104.06294); a registered policy (`rl_type`: PPO or SAC) acts
and learns on s instead of o. The model learns only from MuZero's own losses (value, reward, game
over, optionally reanalyzed policy) on its own replay of raw observations and its own schedule;
`repr.encoder_grad` also lets the wrapped policy's losses reach h. Every batch is encoded again with
the current h when it is used, so stored data never holds stale latents.

`policy.type='muzero_repr'` resolves (`specialize`) to a class built from this one and the wrapped
policy's, so the config holds the keys of both, and the run uses the wrapped policy's pipeline.
"""
from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any, Iterable, Mapping, Optional

import torch
import torch.nn as nn
from easydict import EasyDict

from tidal.base.errors import ConfigError
from tidal.mcts import SearchConfig
from tidal.models.muzero import MuZeroModel
from tidal.base.device import policy_device
from tidal.policies.base import MODES, Policy
from tidal.policies.common import adam, split_action_mask
from tidal.base.modes import EnvLayout, Timestep
from tidal.policies.muzero_learner import RepresentationLearner, RepresentationOptions, search_config
from tidal.registry import POLICY_REGISTRY
from tidal.worker.prioritized_trajectory_buffer import PrioritizedTrajectoryBuffer
from tidal.worker.trajectory_buffer import TrajectoryBuffer

RL_TYPES = ('ppo', 'discrete_sac', 'sac')  # the policies that can learn on the latent


@POLICY_REGISTRY.register('muzero_repr')
class MuZeroReprPolicy(RepresentationOptions, Policy):
    remote_collect = False  # the collect mode holds the MuZero model's own replay

    config = dict(
        type='muzero_repr',
        # (str in {'ppo', 'discrete_sac', 'sac'}) The registered policy that acts and learns on s = h(o); its
        # keys (learn, collect, model, ...) are this policy's too, and its pipeline runs the training.
        rl_type='ppo',
        repr=dict(
            # (bool) Train f's policy on reanalyze's visit distribution: no search acts here, so it needs
            # reanalyze_ratio=1.
            train_policy=False,
            # (float in [0, 1]) Discount of the model's n-step value targets (and of reanalyze's search).
            discount_factor=0.99,
            # (bool) Let the wrapped policy's losses train h too (an Adam over h's parameters with
            # repr.learning_rate); False trains h on MuZero's losses alone.
            encoder_grad=False,
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
            training=dict(
                # (int > 0) Update the model every this many updates (train iterations) of the wrapped policy.
                interval=1,
                # (int > 0) Sequences sampled per model update.
                mini_batch_size=256,
                # (int > 0) Consecutive unroll starts per sequence (each a sample of its own; capped at its
                # env's newest step).
                mini_batch_length=1,
                # (int > 0) Model updates each time the interval comes round.
                num_updates_per_train_iter=1,
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
    def specialize(cls, policy_cfg: Mapping[str, Any]) -> type:
        """The class of this policy wrapped around the `rl_type` policy: both configs, the wrapped pipeline."""
        if cls is not MuZeroReprPolicy:
            return cls  # already wrapped around its policy
        rl_type = policy_cfg.get('rl_type', cls.config['rl_type'])
        if rl_type not in RL_TYPES:
            raise ConfigError(f"config key 'policy.rl_type' must be one of {', '.join(map(repr, RL_TYPES))} "
                              f'(the policy that learns on the latent), got {rl_type!r}')
        return _wrapped(POLICY_REGISTRY.get(rl_type))

    def __new__(cls, cfg: dict, *args: Any, **kwargs: Any) -> 'MuZeroReprPolicy':
        # POLICY_REGISTRY.build('muzero_repr', cfg) makes the wrapped class too
        return super().__new__(cls.specialize(cfg))

    def __init__(self, cfg: dict, model: Optional[nn.Module] = None, enable_field: Iterable[str] = MODES) -> None:
        """`model`, if given, is the wrapped policy's; the MuZero model is always built from policy.repr.model."""
        cfg = EasyDict(cfg)
        check_wrapped_options(cfg)
        self._repr_model = build_repr_model(cfg, self._continuous_actions(cfg)).to(
            policy_device(cfg))
        self._repr_buffer: Optional[TrajectoryBuffer] = None  # built at the first collection: it needs num_envs
        self._collect_latent: Optional[tuple[Any, Any]] = None  # (obs, encoded obs) of the latest action
        super().__init__(cfg, model, enable_field)
        self._networks = nn.ModuleDict({'repr': self._repr_model, 'rl': self._model})

    def _continuous_actions(self, cfg: EasyDict) -> bool:
        return self.action_space == 'continuous' or cfg.model.get('action_space') == 'continuous'

    def _model_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The wrapped policy's model sees latents, not observations."""
        return {**super()._model_kwargs(kwargs), 'obs_shape': self._cfg.repr.model.latent_size}

    @property
    def model(self) -> nn.Module:
        """Both networks ('repr': the MuZero model, 'rl': the wrapped policy's), e.g. for finite checks."""
        return self._networks

    @property
    def repr_model(self) -> MuZeroModel:
        return self._repr_model

    @property
    def repr_buffer(self) -> Optional[TrajectoryBuffer]:
        """The model's replay (raw observations), once something was collected."""
        return self._repr_buffer

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
        super()._init_learn()
        repr_cfg = self._cfg.repr
        seed = int(torch.randint(2**62, ()))  # from the run's seeded generator: the same run, the same samples
        self._learner = RepresentationLearner(self._repr_model, repr_cfg, self._repr_search_config(), self._device,
                                              seed)
        self._encoder_optimizer = (adam(self._repr_model.representation.parameters(), repr_cfg.learning_rate)
                                   if repr_cfg.encoder_grad else None)
        self._learn_calls = 0
        # the latest model update's values, reported with every update: the finite guard and the logs fix
        # their keys at the first update, which comes before the model's first one (0 until then)
        self._repr_info = {name: torch.zeros((), device=self._device) for name in self._repr_monitor_vars()}

    def _repr_search_config(self) -> SearchConfig:
        return search_config(self._cfg.search, self._cfg.repr.discount_factor)

    def _forward_learn(self, batch: dict[str, Any]) -> dict[str, Any]:
        # 1. the wrapped policy's update on the latents of the batch, encoded by the current h
        inner_batch = dict(batch)
        if 'next_obs' in batch:  # s' only enters targets: never a path into h
            inner_batch['next_obs'] = self._encoded(batch['next_obs'])
        if self._encoder_optimizer is None:
            inner_batch['obs'] = self._encoded(batch['obs'])
            info = super()._forward_learn(inner_batch)
        else:
            # h runs once; the wrapped policy sees a leaf copy of s, whose gradient sums over all its backward
            # passes (SAC's critic and actor losses), and that sum then flows through h in one step
            _, latent = self._encode(batch['obs'], grad=True)
            leaf = latent.detach().requires_grad_(True)
            inner_batch['obs'] = with_observation(batch['obs'], leaf)
            info = super()._forward_learn(inner_batch)
            if leaf.grad is not None:
                self._encoder_optimizer.zero_grad(set_to_none=True)
                latent.backward(leaf.grad)
                self._encoder_optimizer.step()
        # 2. every `interval` updates, the MuZero model's own updates on its replay
        self._learn_calls += 1
        training = self._cfg.repr.training
        if self._learn_calls % training.interval == 0 and self._repr_steps() >= training.initial_collect_steps:
            self._repr_info = self._train_repr()
        info.update(self._repr_info)
        return info

    def _repr_steps(self) -> int:
        """Env steps ever written to the model's replay."""
        return 0 if self._repr_buffer is None else int(self._repr_buffer.current_position().sum())

    def _train_repr(self) -> dict[str, torch.Tensor]:
        """`num_updates_per_train_iter` updates of MuZero's loss on replayed unrolls; their mean values."""
        training, buffer = self._cfg.repr.training, self._repr_buffer
        infos = []
        for _ in range(training.num_updates_per_train_iter):
            env_ids, positions, weight = self._sample_starts()
            batch = self._learner.make_batch(buffer, env_ids, positions)
            batch['obs'] = split_action_mask(batch['obs'])[0]
            info = self._learner.train(batch, weight=weight)
            if training.priority:
                buffer.update_priority(env_ids, positions, info['priority'])
            infos.append(info)
        return {f'repr_{name}': torch.stack([info[name] for info in infos]).mean()
                for name in self._learner.monitor_vars()}

    def _sample_starts(self) -> tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor]]:
        """(env ids, positions, IS weights or None), each [mini_batch_size * mini_batch_length]: sequences of
        consecutive starts, capped at their env's newest step."""
        training, buffer = self._cfg.repr.training, self._repr_buffer
        weight = None
        if training.priority:
            env_ids, starts, weight = buffer.sample_weighted(training.mini_batch_size)
        else:
            env_ids, starts = buffer.sample_positions(training.mini_batch_size)
        length = training.mini_batch_length
        newest = buffer.current_position().to(starts.device)[env_ids] - 1
        positions = torch.minimum(starts[:, None] + torch.arange(length, device=starts.device), newest[:, None])
        if weight is not None:
            weight = weight.repeat_interleave(length)
        return env_ids.repeat_interleave(length), positions.reshape(-1), weight

    def _repr_monitor_vars(self) -> list[str]:
        return [f'repr_{name}' for name in self._learner.monitor_vars()]

    def _monitor_vars_learn(self) -> list[str]:
        return super()._monitor_vars_learn() + self._repr_monitor_vars()

    def _state_dict_learn(self) -> dict[str, Any]:
        state = super()._state_dict_learn()
        state.update(repr=self._learner.state_dict(), repr_learn_calls=self._learn_calls,
                     repr_info={name: value.detach().cpu() for name, value in self._repr_info.items()})
        if self._encoder_optimizer is not None:
            state['encoder_optimizer'] = self._encoder_optimizer.state_dict()
        return state

    def _load_state_dict_learn(self, state: dict[str, Any]) -> None:
        super()._load_state_dict_learn(state)
        self._learner.load_state_dict(state['repr'])
        self._learn_calls = int(state['repr_learn_calls'])
        self._repr_info = {name: value.to(self._device) for name, value in state['repr_info'].items()}
        if self._encoder_optimizer is not None:
            self._encoder_optimizer.load_state_dict(state['encoder_optimizer'])

    def weights(self) -> dict[str, Any]:
        return {**super().weights(), 'repr': {'model': self._repr_model.state_dict()}}

    def load_weights(self, state: dict[str, Any]) -> None:
        """The wrapped policy's networks and the MuZero model (learn state's 'repr')."""
        super().load_weights(state)
        self._repr_model.load_state_dict(state['repr']['model'])

    # ----- collect mode ----------------------------------------------------------------------
    def _init_collect(self) -> None:
        super()._init_collect()
        self._buffer_seed = int(torch.randint(2**62, ()))

    def _collect_input(self, obs: Any) -> Any:
        """The encoded obs the wrapped policy acts on, kept for the transition of this step."""
        encoded = self._encoded(obs)
        self._collect_latent = (obs, encoded)
        return encoded

    def _forward_collect(self, obs: Any, **kwargs: Any) -> dict[str, Any]:
        return super()._forward_collect(self._collect_input(obs), **kwargs)

    def _random_action(self, obs: Any) -> dict[str, Any]:
        return super()._random_action(self._collect_input(obs))

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Timestep) -> dict[str, Any]:
        cached = self._collect_latent
        encoded = cached[1] if cached is not None and cached[0] is obs else self._encoded(obs)
        columns = super()._process_transition(encoded, policy_output,
                                              replace(timestep, next_obs=self._encoded(timestep.next_obs)))
        # the wrapped policy stores raw observations: learning encodes them with the h of its time
        columns['obs'] = obs
        if 'next_obs' in columns:
            columns['next_obs'] = timestep.next_obs
        # for the model's replay (moved there by _get_train_sample): the env's reward, which the wrapped
        # policy may scale, and V(final obs) where an episode was cut off
        columns['repr_reward'] = timestep.reward.to(torch.float32)
        columns['repr_bootstrap_value'] = self._truncation_values(timestep)
        return columns

    @torch.no_grad()
    def _truncation_values(self, timestep: Timestep) -> torch.Tensor:
        """The model's V(final obs) [N] where an episode was truncated, else 0."""
        value = torch.zeros(timestep.reward.shape[0], device=timestep.reward.device)
        cut = timestep.truncated
        if bool(cut.any()):
            final, _ = split_action_mask(timestep.next_obs)
            value[cut] = self._repr_model.value(self._repr_model.initial_inference(final[cut]))
        return value

    def _get_train_sample(self, transitions: dict[str, Any], layout: EnvLayout) -> dict[str, Any]:
        """The raw steps go into the model's replay; the wrapped policy makes its samples from the latents,
        which are then swapped back for the raw observations."""
        self._replay(layout.num_envs).extend({
            'obs': transitions['obs'], 'action': transitions['action'], 'reward': transitions.pop('repr_reward'),
            'terminated': transitions['terminated'], 'truncated': transitions['truncated'],
            'bootstrap_value': transitions.pop('repr_bootstrap_value'),
        })
        raw = {key: transitions[key] for key in ('obs', 'next_obs') if key in transitions}
        transitions.update({key: self._encoded(value) for key, value in raw.items()})
        sample = super()._get_train_sample(transitions, layout)
        sample.update({key: value for key, value in raw.items() if key in sample})
        return sample

    def _replay(self, num_envs: int) -> TrajectoryBuffer:
        """The model's replay, built for `num_envs` collector envs the first time."""
        if self._repr_buffer is None:
            training = self._cfg.repr.training
            per_env = -(-training.replay_buffer_length // num_envs)
            if training.priority:
                self._repr_buffer = PrioritizedTrajectoryBuffer(
                    num_envs, per_env, alpha=training.priority_alpha, beta=training.priority_beta,
                    device=self._device, seed=self._buffer_seed)
            else:
                self._repr_buffer = TrajectoryBuffer(num_envs, per_env, device=self._device, seed=self._buffer_seed)
        return self._repr_buffer

    def _state_dict_collect(self) -> dict[str, Any]:
        """The wrapped policy's acting state and the model's replay (collected data, for an exact resume)."""
        state = super()._state_dict_collect()
        if self._repr_buffer is not None:
            state['repr_buffer'] = self._repr_buffer.state_dict()
        return state

    def _load_state_dict_collect(self, state: dict[str, Any]) -> None:
        super()._load_state_dict_collect(state)
        if 'repr_buffer' in state:
            self._replay(int(state['repr_buffer']['num_envs'])).load_state_dict(state['repr_buffer'])

    # ----- eval mode -------------------------------------------------------------------------
    def _forward_eval(self, obs: Any) -> dict[str, Any]:
        return super()._forward_eval(self._encoded(obs))


@functools.lru_cache(maxsize=None)
def _wrapped(inner: type) -> type:
    """MuZeroReprPolicy around `inner`: the MRO merges both configs, the wrapper's keys winning."""
    return type(f'MuZeroRepr{inner.__name__}', (MuZeroReprPolicy, inner), {
        '__module__': __name__, '__doc__': f'{inner.__name__} acting and learning on a MuZero latent.',
        'pipeline': inner.pipeline, 'action_space': inner.action_space})


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
    if cfg.model.get('obs_shape') is None or cfg.model.get('action_shape') is None:
        raise ConfigError('policy.model.obs_shape and policy.model.action_shape must be set (compile_config '
                          'fills them from the env): the MuZero model is built for the env')


def build_repr_model(cfg: EasyDict, continuous_actions: bool) -> MuZeroModel:
    """The MuZero model of `policy.repr.model` for the env's observations and actions."""
    action_shape = cfg.model.action_shape
    action_size = int(torch.tensor(action_shape).prod()) if isinstance(action_shape, (list, tuple)) \
        else int(action_shape)
    return MuZeroModel(cfg.model.obs_shape, action_size, continuous_actions=continuous_actions, **cfg.repr.model)
