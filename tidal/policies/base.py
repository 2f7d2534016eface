"""Policy: one algorithm's networks, losses and action selection, seen through three modes.

The workers never touch a policy's internals: the learner calls `learn_mode`, collectors call
`collect_mode` and evaluators call `eval_mode`. A new algorithm subclasses `Policy`, declares its
`config` defaults and fills in the `_init_*` / `_forward_*` methods of the modes it supports.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

import torch
import torch.nn as nn
from easydict import EasyDict

from tidal.base.defaults import FreeDict, class_defaults, mro_owners
from tidal.base.errors import ConfigError, TidalError
from tidal.base.device import policy_device
from tidal.base.parts import Parts
from tidal.base.modes import ActingSteps, CollectView, EnvLayout, EvalView, LearnView, PolicyViews, Timestep
from tidal.base.stages import LearnPlan, PlanFn
from tidal.config.declared import check_rules_declared
from tidal.models.acting import ActingNetwork
from tidal.policies.common import run_plan
from tidal.policies.compiled import CompiledUpdate, compile_mode
from tidal.registry import MODEL_REGISTRY, POLICY_REGISTRY, import_names
from tidal.rl_utils.normalizer import RunningMeanStd

MODES = ('learn', 'collect', 'eval')


class Policy:
    """Base of every registered policy; `config` holds the keys all policies share."""

    config: dict = dict(
        # (str) Registered policy name; filled from create_config.policy.type.
        type='',
        # (list[str]) Modules to import before the policy is looked up (a user's own policy).
        import_names=[],
        # (str in {'cpu', 'cuda', 'auto'} or str matching 'cuda:[0-9]+') Where networks and losses live;
        # 'auto' is cuda when available.
        device='cpu',
        # (bool) Older spelling of device='cuda'; True wins over device='cpu'.
        cuda=False,
        # (bool) Sample the replay buffer in proportion to priority (prioritized replay).
        priority=False,
        # (bool) Weight each sample's loss by its importance-sampling weight (needs priority).
        priority_IS_weight=False,
        # (int >= 0) Env steps of uniform random actions collected before training starts; at most
        # other.replay_buffer.replay_buffer_size.
        random_collect_size=0,
        # Keyword arguments of the model constructor; `type` picks a registered model.
        model=FreeDict(),
        learn=dict(
            # (int in [1, 100_000]) Gradient updates after each call of the collector.
            update_per_collect=1,
            # (int > 0) Transitions per gradient update.
            batch_size=256,
            # (bool) Treat every termination as a truncation (always bootstrap).
            ignore_done=False,
            # (str in {'none', 'default', 'reduce-overhead', 'max-autotune'} or bool) Compile each loss stage's
            # step (forward, backward, clipping, optimizer step) with torch.compile in this mode; on CUDA,
            # 'reduce-overhead' and 'max-autotune' replay them as CUDA graphs. false (YAML's off) is 'none',
            # true 'default'. The first updates wait for the compiler (tens of seconds).
            compile='none',
            learner=dict(
                # (int > 0) Write losses to the logs every this many train iterations.
                log_freq=100,
                # (int >= 0) Also write them every this many env steps, whichever of the two comes first
                # (0 = off): a policy that makes few updates per collection is still logged regularly.
                log_freq_env_steps=5000,
                # (int > 0) Save the latest checkpoint every this many train iterations.
                save_ckpt_freq=1000,
                # (int >= 0) Also save it every this many env steps, whichever of the two comes first (0 = off).
                save_ckpt_freq_env_steps=0,
                # (float > 0) Also save it every this many seconds of wall time (besides at the start, after
                # the warm-up and on SIGTERM / SIGINT), so that a run killed at any moment loses little.
                save_ckpt_secs=300.0,
            ),
        ),
        collect=dict(
            # (int > 0) Env steps (summed over all collector envs) per call of the collector; at most
            # other.replay_buffer.replay_buffer_size.
            n_sample=1,
            # (int > 0) Length of each training sample, in steps; 1 means single transitions.
            unroll_len=1,
            # (str in {'learner', 'cpu'}) Where the local collector acts: 'learner', on the policy's device;
            # 'cpu', with a CPU copy of the collect mode whose weights are refreshed from the learner before each
            # collection (a GPU learner then sends its weights to the host once per collection instead of each
            # env step's observations and actions through the GPU). On a CPU learner it acts the same, through a copy.
            acting_device='learner',
        ),
        eval=dict(
            # (bool) Evaluate the policy's most likely action (greedy or mean; TAAC's epsilon-greedy); False
            # evaluates the sampling policy that collection acts with, less exploration added on top of it (MuZero's
            # root noise), drawing from a generator the evaluator seeds for each evaluation.
            deterministic=True,
            evaluator=dict(
                # (int > 0) Evaluate every this many train iterations.
                eval_freq=1000,
                # (int >= 0) Also evaluate every this many env steps, whichever of the two comes first (0 = off):
                # a policy that makes few updates per collection is still evaluated regularly.
                eval_freq_env_steps=5000,
                # (int >= 0) Record one episode of every this many evaluations (the first included) into
                # <run>/videos/eval_env<env step>.mp4, a GIF where no MP4 encoder is installed (0 = off); the
                # returns stay those of an unrecorded evaluation.
                video_every=0,
                # (bool) Evaluate on a Ray actor of its own (Ray starts as for collector.type='ray'), so that
                # training goes on meanwhile: the row is logged when the result arrives, equal to a local
                # evaluation's; an evaluation due while one runs, each checkpoint and the run's end wait for it.
                on_ray=False,
            ),
        ),
        other=dict(
            replay_buffer=dict(
                # (int > 0) Transitions the replay buffer holds before the oldest are overwritten; refused
                # if they cannot fit in the memory available.
                replay_buffer_size=1_000_000,
                # (float in [0, 1]) Prioritized replay: priority exponent (0 = uniform, 1 = fully by priority).
                alpha=0.6,
                # (float in [0, 1]) Prioritized replay: initial importance-sampling exponent.
                beta=0.4,
                # (int >= 0) Prioritized replay: samples over which beta anneals to 1 (0 = fixed beta).
                anneal_step=0,
            ),
        ),
    )

    #: 'continuous' or 'discrete': the action space the policy's networks expect (None: any).
    action_space: Optional[str] = None
    #: The registered data feed (`FEED_REGISTRY`) that trains this policy: 'replay' (off-policy), 'sqil' (needs
    #: demonstrations), 'rollout' (on-policy, PPO), 'ppg' (rollouts with auxiliary phases) or 'unroll' (MuZero).
    pipeline: str = 'replay'
    #: Whether a copy of the collect mode in another process (a Ray worker) acts as this one would: false
    #: for a policy whose collect mode keeps learning state (its own replay, say).
    remote_collect: bool = True

    @classmethod
    def default_config(cls, cfg: Optional[Mapping[str, Any]] = None) -> EasyDict:
        """The defaults of this policy's config owners under `cfg` (its policy section; None: the defaults
        alone), each merged over those before it."""
        return EasyDict(class_defaults(cls, cfg))

    @classmethod
    def config_owners(cls, cfg: Mapping[str, Any]) -> tuple[type, ...]:
        """The classes whose `config` literals make up this policy's keys under `cfg` (its policy section, as
        the user wrote it or compiled), base first: those of its MRO, unless a policy that holds another one
        adds the held policy's. Defaults, rules and comments all walk these (`tidal.base.defaults`)."""
        return mro_owners(cls)

    @classmethod
    def action_space_of(cls, cfg: Mapping[str, Any]) -> Optional[str]:
        """The action space ('continuous' or 'discrete', None: any) this policy needs under `cfg`."""
        return cls.action_space

    @classmethod
    def default_model(cls, cfg: Mapping[str, Any]) -> tuple[str, list[str]]:
        """The registered model name, and the modules that register it, this policy builds under `cfg` (its
        policy section, compiled or as the user wrote it) when `policy.model.type` is not set.

        Every registered policy defines it (`check_policy_class` refuses one that does not), so a config
        check can always know the model, and no subclass is needed to pick another one (`multi_agent`).
        """
        raise TidalError(f'{_qualname(cls)} must define default_model(cls, cfg) naming its registered model')

    def __init__(self, cfg: dict, model: Optional[nn.Module] = None,
                 enable_field: Iterable[str] = MODES) -> None:
        self._cfg = EasyDict(cfg)
        self._enable_field = tuple(enable_field)
        for field in self._enable_field:
            if field not in MODES:
                raise ConfigError(f"unknown policy mode '{field}' in enable_field; choose from {MODES}")
        self._device = policy_device(self._cfg)
        # Any: each algorithm reads its own model's heads (actor, critic, ...); workers see `model` as nn.Module
        self._model: Any = self.parts.network('model', (model if model is not None else self._build_model()).to(
            self._device), acting=True)
        # what the eval mode samples from (eval.deterministic=False): never torch's global generator, which
        # training draws from, so an evaluation neither shifts training nor depends on it
        self._eval_generator = torch.Generator(device=self._device)
        self._compiled = self._compiled_update() if 'learn' in self._enable_field else None
        for field in self._enable_field:
            getattr(self, f'_init_{field}')()
        undeclared = self.parts.undeclared()
        if undeclared is not None:
            raise TidalError(f"policy '{self._cfg.get('type') or type(self).__name__}': its {undeclared}; declare the "
                             f"module that holds it (self.parts.network or self.parts.scalar)")

    def _compiled_update(self) -> Optional[CompiledUpdate]:
        """The compiled functions of the update that `policy.learn.compile` asks for (None: eager)."""
        mode = compile_mode(self._cfg.get('learn', {}).get('compile', 'none'))
        return None if mode == 'none' else CompiledUpdate(mode, self._device)

    def _build_model(self) -> nn.Module:
        kwargs = dict(self._cfg.get('model', {}))
        name = kwargs.pop('type', None)
        modules = kwargs.pop('import_names', [])
        if not name:
            name, modules = self.default_model(self._cfg)
        import_names(modules)
        return MODEL_REGISTRY.build(name, **self._model_kwargs(kwargs))

    def _model_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The model constructor's keyword arguments from `policy.model`; a policy adds what it fixes."""
        return kwargs

    @property
    def parts(self) -> Parts:
        """The policy's declared parts (`tidal.base.parts`): its checkpoint, weight sync and seed stacking follow
        from them. A policy declares each part where it builds it, before or after `Policy.__init__`."""
        if '_parts' not in self.__dict__:
            self._parts = Parts()
        return self._parts

    def running_statistics(self) -> dict[str, RunningMeanStd]:
        """Statistics that acting updates (observation or return normalisers), by their key in `weights`.

        A collector in another process updates its own copies; the driver merges them back.
        """
        return self.parts.of('statistics')

    def weights(self) -> dict[str, Any]:
        """What acting needs, as plain tensors: the parts declared `acting` (the model, running statistics, a
        temperature collection samples with)."""
        return {key: part.state_dict() for key, part in self.parts.weights().items()}

    def load_weights(self, state: dict[str, Any]) -> None:
        """Load what `weights` gives, or the same entries of a learn-mode state dict (a checkpoint's
        'policy' entry)."""
        for key, part in self.parts.weights().items():
            part.load_state_dict(state[key])

    def export_actor(self, action_mask: bool = False) -> ActingNetwork:
        """The eval mode's deterministic action as a plain module of this policy's layers (`tidal export`), for
        observations that come with an action mask when `action_mask` (then its second input).

        A policy whose eval mode can act in one forward pass overrides this; the default refuses in one line.
        """
        name = self._cfg.get('type') or type(self).__name__
        raise TidalError(f"policy '{name}' cannot be exported: it defines no acting network (export_actor)")

    @property
    def device(self) -> torch.device:
        return self._device

    @property
    def model(self) -> nn.Module:
        return self._model

    @property
    def cfg(self) -> EasyDict:
        return self._cfg

    # ----- the three modes -------------------------------------------------------------------
    @property
    def learn_mode(self) -> LearnView:
        self._check_enabled('learn')
        plan = self._plan_fn()
        return LearnView(
            forward=self.parts.in_mode(self._forward_learn, True), state_dict=self._state_dict_learn,
            load_state_dict=self._load_state_dict_learn, monitor_vars=self._monitor_vars_learn,
            reset=self._reset_learn, optimizers=self._optimizers_learn, cfg=self._cfg,
            plan=None if plan is None else self.parts.in_mode(plan, True))

    @property
    def collect_mode(self) -> CollectView:
        self._check_enabled('collect')
        return CollectView(
            forward=self.parts.in_mode(self._forward_collect, False), random_action=self._random_action,
            process_transition=self._process_transition,
            get_train_sample=self.parts.in_mode(self._get_train_sample, False),
            reset=self._reset_collect, state_dict=self._state_dict_collect,
            load_state_dict=self._load_state_dict_collect, weights=self.weights, load_weights=self.load_weights,
            running_statistics=self.running_statistics, cfg=self._cfg, steps=self._own_acting_steps('collect'))

    @property
    def eval_mode(self) -> EvalView:
        self._check_enabled('eval')
        return EvalView(forward=self.parts.in_mode(self._forward_eval, False), reset=self._reset_eval,
                        seed=self._seed_eval, cfg=self._cfg, steps=self._own_acting_steps('eval'))

    def _own_acting_steps(self, mode: str) -> Optional[ActingSteps]:
        """`_acting_steps(mode)`, unless a subclass overrides the mode's forward below the class that stated
        them (its forward then acts otherwise)."""
        forward = '_forward_collect' if mode == 'collect' else '_forward_eval'
        if not issubclass(_owner(type(self), '_acting_steps'), _owner(type(self), forward)):
            return None
        return self._acting_steps(mode)

    def _acting_steps(self, mode: str) -> Optional[ActingSteps]:
        """The collect ('collect') or eval ('eval') forward as `ActingSteps`, which a seed group runs once for all
        its seeds; None (the default) has the group call each seed's `_forward_collect` / `_forward_eval`."""
        return None

    @classmethod
    def plans_updates(cls) -> bool:
        """Whether the policy states its update as loss stages (so a seed group can stack it): a subclass that
        overrides `_forward_learn` below the class that planned it learns otherwise."""
        planner, learner = _owner(cls, '_learn_plan'), _owner(cls, '_forward_learn')
        return planner is not Policy and issubclass(planner, learner)

    @classmethod
    def group_refusal(cls, cfg: Mapping[str, Any]) -> Optional[str]:
        """Why this config of the policy cannot train in a seed group (a config key and what to do), or None."""
        if cfg['policy']['collect'].get('acting_device', 'learner') != 'learner':
            return ("policy.collect.acting_device: a seed group acts for all its seeds on the learner's device; set "
                    "it to 'learner'")
        if compile_mode(cfg['policy']['learn'].get('compile', 'none')) != 'none':
            return ('policy.learn.compile: a seed group\'s stacked update runs eager; set it to none, or train one '
                    'process per seed')
        return None

    def _plan_fn(self) -> Optional[PlanFn]:
        return self._learn_plan if self.plans_updates() else None

    def _learn_plan(self, batch: dict[str, Any]) -> LearnPlan:
        """The update of `batch` as loss stages (`tidal.base.stages`); a policy that defines it can train in a
        seed group, and the default `_forward_learn` runs it."""
        raise NotImplementedError

    def learn_optimizers(self) -> list[torch.optim.Optimizer]:
        """Every optimizer of the learn mode and of the extra learn views (PPG's auxiliary phase)."""
        optimizers = list(self.learn_mode.optimizers())
        for view in self.extra_views().values():
            if isinstance(view, LearnView):
                optimizers += [optimizer for optimizer in view.optimizers() if optimizer not in optimizers]
        return optimizers

    def extra_views(self) -> dict[str, Any]:
        """Views besides the three modes that this policy's data feed needs, by name (PPG: 'aux')."""
        return {}

    def views(self) -> PolicyViews:
        """What a data feed sees of this policy: device, learn and collect modes, extra views."""
        return PolicyViews(device=self._device, learn=self.learn_mode, collect=self.collect_mode,
                           extra=self.extra_views(), policy_type=str(self._cfg.get('type', type(self).__name__)))

    def _check_enabled(self, field: str) -> None:
        if field not in self._enable_field:
            raise RuntimeError(f"{type(self).__name__} was built without its '{field}' mode "
                               f"(enable_field={self._enable_field})")

    # ----- learn mode ------------------------------------------------------------------------
    def _init_learn(self) -> None:
        raise NotImplementedError

    def _forward_learn(self, batch: dict[str, Any]) -> dict[str, Any]:
        """One gradient update on a batch; returns 0-d tensors to log (and 'priority' if used). By default the
        stages of `_learn_plan`, in order, each with its networks in the modes of its optimizer."""
        return run_plan(self._learn_plan(batch), batch, self._compiled, self.parts)

    def _monitor_vars_learn(self) -> list[str]:
        """The names every update returns: logged first, watched for NaN and inf, and required of the first one."""
        return []

    def _state_dict_learn(self) -> dict[str, Any]:
        return {**self.weights(), **{key: part.state_dict() for key, part in self.parts.learn_state().items()}}

    def _load_state_dict_learn(self, state: dict[str, Any]) -> None:
        self.load_weights(state)
        for key, part in self.parts.learn_state().items():
            part.load_state_dict(state[key])

    def _reset_learn(self) -> None:
        pass

    def _optimizers_learn(self) -> list[torch.optim.Optimizer]:
        """Every declared optimizer, for gradient averaging over learner processes (DDP)."""
        optimizers = self.parts.optimizers()
        if not optimizers:
            raise NotImplementedError(f'{type(self).__name__} must declare its optimizers (self.parts.optimizer) to '
                                      f'train with several learner processes')
        return optimizers

    # ----- collect mode ----------------------------------------------------------------------
    def _init_collect(self) -> None:
        pass

    def _forward_collect(self, obs: Any, **kwargs: Any) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def _random_action(self, obs: Any) -> dict[str, torch.Tensor]:
        """Uniform random actions for the warm-up phase (`random_collect_size`)."""
        raise NotImplementedError

    def _process_transition(self, obs: Any, policy_output: dict[str, torch.Tensor],
                            timestep: Timestep) -> dict[str, Any]:
        """The columns stored for a batch of env steps; `timestep.next_obs` is the true successor."""
        return {
            'obs': obs,
            'action': policy_output['action'],
            'reward': timestep.reward,
            'next_obs': timestep.next_obs,
            'terminated': timestep.terminated,
            'truncated': timestep.truncated,
        }

    def _get_train_sample(self, transitions: dict[str, Any], layout: EnvLayout) -> dict[str, Any]:
        """What the data feed keeps of a batch of collected transitions (rows step-major, see EnvLayout).

        Unchanged by default: sequences of `collect.unroll_len` steps are cut by the buffer when it
        samples (`ReplayBuffer.sample_sequence`). A policy overrides this to relabel or add columns.
        """
        return transitions

    def _reset_collect(self, env_ids: Optional[Iterable[int]] = None) -> None:
        pass

    def _state_dict_collect(self) -> dict[str, Any]:
        """Per-env acting state (tensors) that a resumed run needs to act exactly as before the stop."""
        return {}

    def _load_state_dict_collect(self, state: dict[str, Any]) -> None:
        pass

    # ----- eval mode -------------------------------------------------------------------------
    def _init_eval(self) -> None:
        pass

    def _forward_eval(self, obs: Any) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def _reset_eval(self, env_ids: Optional[Iterable[int]] = None) -> None:
        pass

    def _seed_eval(self, seed: int) -> None:
        """Reseed the generator eval draws from; the evaluator does so before each evaluation, which then
        depends only on the weights and its seed."""
        self._eval_generator.manual_seed(seed)


def check_policy_class(name: str, cls: Any) -> None:
    """What POLICY_REGISTRY asks of a policy when it registers: its own default_model, and a rule for each
    default (`check_rules_declared`), so that a malformed policy fails where it is written."""
    owner = next((base for base in getattr(cls, '__mro__', ()) if 'default_model' in vars(base)), None)
    if owner is None or owner is Policy:
        raise TidalError(f"policy '{name}' ({_qualname(cls)}) must define default_model(cls, cfg) naming its "
                         f"registered model")
    check_rules_declared('policy', name, cls)


def _owner(cls: type, name: str) -> type:
    """The class of `cls`'s MRO that defines the attribute `name`."""
    return next(klass for klass in cls.__mro__ if name in vars(klass))


def _qualname(cls: Any) -> str:
    return f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', repr(cls))}"


POLICY_REGISTRY.check = check_policy_class
