"""Every registered policy on each device: its first update, taken from a real short run, replayed from its state
and batch; no host read in an update; compiled updates equal to eager ones; on a GPU (the `gpu` marker) the same
update equal to the CPU's, free of device syncs, and each policy trained, checkpointed and moved CPU <-> GPU."""
from __future__ import annotations

import contextlib
import copy
import functools
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import torch
from easydict import EasyDict
from torch.testing import assert_close

import tidal.policies  # noqa: F401  (registers the policies)
from tidal.base.nest import tree_map
from tidal.entry.demos import collect_demos
from tidal.entry.evaluate import evaluate_checkpoint
from tidal.entry.pipelines import train
from tidal.registry import POLICY_REGISTRY, policy_class
from tidal.worker.builders import set_tf32
from tidal.worker.checkpoint import load_checkpoint, policy_state
from tidal.worker.learner import Learner

EVAL = ('env.n_evaluator_episode=1', 'env.evaluator_env_num=1')
OFF_POLICY = ('policy.random_collect_size=100', 'policy.learn.batch_size=32', *EVAL)

# (zoo config, env steps, overrides) of a short run of each registered policy that makes updates within its budget
SHORT_RUNS: dict[str, tuple[str, int, tuple[str, ...]]] = {
    'sac': ('pendulum_sac', 200, OFF_POLICY),
    'sac_v': ('pendulum_sac_v', 200, OFF_POLICY),
    'crossq': ('pendulum_crossq', 200, OFF_POLICY),
    'sqil_sac': ('pendulum_sqil_sac', 200, (*OFF_POLICY, 'env.stop_value=null')),  # + its demonstrations
    'discrete_sac': ('cartpole_discrete_sac', 200, OFF_POLICY),
    'dqn': ('cartpole_dqn', 200, (*OFF_POLICY, 'policy.learn.update_per_collect=1')),
    'sql': ('cartpole_sql', 200, (*OFF_POLICY, 'policy.learn.update_per_collect=1')),
    'sqil': ('cartpole_sqil', 200, (*OFF_POLICY, 'policy.learn.update_per_collect=1')),  # + its expert's checkpoint
    'td3': ('pendulum_td3', 200, (*OFF_POLICY, 'policy.collect.n_sample=1', 'policy.learn.update_per_collect=2')),
    'ddpg': ('pendulum_ddpg', 200, (*OFF_POLICY, 'policy.collect.n_sample=1', 'policy.learn.update_per_collect=1')),
    'taac': ('pendulum_taac', 200, OFF_POLICY),
    'taac_l': ('pendulum_taac_l', 200, OFF_POLICY),
    'taac_q': ('pendulum_taac_q', 200, OFF_POLICY),
    'ppo': ('cartpole_ppo', 256, ('policy.collect.n_sample=128', 'policy.learn.batch_size=64', *EVAL)),
    'a2c': ('cartpole_a2c', 160, EVAL),
    'ppg': ('cartpole_ppg', 512, ('policy.collect.n_sample=128', 'policy.learn.batch_size=64', *EVAL)),
    'muzero': ('cartpole_muzero', 200, (*OFF_POLICY, 'policy.collect.n_sample=50')),
    'muzero_repr': ('cartpole_muzero_repr_ppo', 512, ('policy.repr.training.initial_collect_steps=128',
                                                      'policy.collect.n_sample=128', 'policy.learn.batch_size=64',
                                                      *EVAL)),
    # offline: their budget in train iterations, their dataset the replay of the short SAC run of `demos`
    'bc': ('pendulum_bc', 20, ('policy.learn.batch_size=32', *EVAL)),
    'td3_bc': ('pendulum_td3_bc', 20, ('policy.learn.batch_size=32', *EVAL)),
    'iql': ('pendulum_iql', 20, ('policy.learn.batch_size=32', *EVAL)),
    'cql': ('pendulum_cql', 20, ('policy.learn.batch_size=32', *EVAL)),
    'rebrac': ('pendulum_rebrac', 20, ('policy.learn.batch_size=32', *EVAL)),
    'discrete_cql': ('cartpole_discrete_cql', 20, ('policy.learn.batch_size=32', *EVAL)),  # a CartPole replay
    # offline to online: from a short offline run of `demos`, that replay in their own
    'iql_online': ('pendulum_iql_online', 120, ('policy.learn.batch_size=32', *EVAL)),
    'cql_online': ('pendulum_cql_online', 120, ('policy.learn.batch_size=32', *EVAL)),
}
OFFLINE = ('bc', 'td3_bc', 'iql', 'cql', 'rebrac', 'discrete_cql')
ONLINE_TWINS = ('iql_online', 'cql_online')


def budget(name: str, steps: int) -> dict[str, int]:
    """The short run's budget: env steps, or train iterations for an offline policy."""
    return {'max_train_iter': steps} if name in OFFLINE else {'max_env_step': steps}


def test_the_short_runs_cover_every_registered_policy():
    own = {name for name in POLICY_REGISTRY.names()  # not those that other tests register
           if POLICY_REGISTRY.get(name).__module__.startswith('tidal.policies.')}
    assert set(SHORT_RUNS) == own


@dataclass
class FirstUpdate:
    """A run's first counted update: its policy config, the learn state before it, its batch, what it
    returned, the learn state after it and the torch seed it ran under."""

    cfg: EasyDict
    before: dict[str, Any]
    batch: dict[str, Any]
    info: dict[str, Any]
    after: dict[str, Any]
    seed: int = 1234


class _Captured(Exception):
    pass


@pytest.fixture(scope='module')
def demos(tmp_path_factory) -> Path:
    """Pendulum demonstrations recorded by a short SAC run, for SQIL-SAC; beside them the run folder of a short
    CartPole DQN run (`cartpole_expert`), for SQIL on SQL to record its own from."""
    folder = tmp_path_factory.mktemp('expert')
    train('cartpole_dqn', seed=0, max_env_step=150, progress=False,
          overrides=[*OFF_POLICY, f'exp_name={folder / "cartpole_expert"}'])
    result = train('pendulum_sac', seed=0, max_env_step=150, progress=False,
                   overrides=[*OFF_POLICY, f'exp_name={folder / "expert"}'])
    for name in ONLINE_TWINS:  # the offline runs the online twins start from, on that run's replay
        offline = name.removesuffix('_online')
        train(f'pendulum_{offline}', seed=0, max_train_iter=5, progress=False,
              overrides=[*SHORT_RUNS[offline][2], f'policy.collect.data_path={folder / "expert"}',
                         f'exp_name={folder / offline}'])
    return collect_demos(result.run_dir / 'config.yaml', result.run_dir / 'ckpt' / 'latest.pt', 1,
                         folder / 'demos.npz')


def short_run_overrides(name: str, demos: Path, *extra: str) -> list[str]:
    config, _, overrides = SHORT_RUNS[name]
    found = [*overrides, *extra]
    if name == 'sqil_sac':
        found.append(f'policy.expert_data_path={demos}')
    if name == 'sqil':
        found += [f'policy.collect.model_path={demos.parent / "cartpole_expert"}', 'policy.collect.expert_episodes=1']
    if name in OFFLINE or name in ONLINE_TWINS:
        source = 'cartpole_expert' if name == 'discrete_cql' else 'expert'
        found.append(f'policy.collect.data_path={demos.parent / source}')
    if name in ONLINE_TWINS:
        found.append(f'policy.learn.init_checkpoint={demos.parent / name.removesuffix("_online")}')
    return found


def capture_first_update(name: str, demos: Path, monkeypatch: pytest.MonkeyPatch, *extra: str) -> FirstUpdate:
    """Run `name`'s short run on the CPU until its first update, and keep that update."""
    config, steps, _ = SHORT_RUNS[name]
    captured: dict[str, Any] = {}
    seed = FirstUpdate.seed

    def first_train(learner: Learner, batch: dict[str, Any]) -> dict[str, Any]:
        captured.update(cfg=copy.deepcopy(learner.policy.cfg), before=clone(learner.policy.state_dict()),
                        batch=clone(batch))
        with cpu_randomness():
            torch.manual_seed(seed)
            info = learner.policy.forward(batch)
        captured.update(info=clone(info), after=clone(learner.policy.state_dict()))
        raise _Captured

    with pytest.MonkeyPatch.context() as patch:  # undoes only this patch: the test's chdir stays
        patch.setattr(Learner, 'train', first_train)
        with pytest.raises(_Captured):
            train(config, seed=0, **budget(name, steps), progress=False,
                  overrides=short_run_overrides(name, demos, 'exp_name=first_update', *extra))
    return FirstUpdate(**captured)


def replay(update: FirstUpdate, device: str, forward: Callable[[Any, dict[str, Any]], dict[str, Any]] | None = None,
           cpu_draws: bool = True, **policy_changes: Any) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """(policy, info, learn state after) of the update replayed by a fresh policy on `device`, its random draws
    made on the CPU's generator (`cpu_draws`, so that both devices draw the same numbers) or on the device's."""
    cfg = copy.deepcopy(update.cfg)
    cfg.device = device
    for path, value in policy_changes.items():
        section = cfg
        *parents, key = path.split('__')
        for parent in parents:
            section = section[parent]
        section[key] = value
    policy = policy_class(cfg.type, cfg)(cfg)
    policy.learn_mode.load_state_dict(clone(update.before))  # on the CPU, as a resumed run loads its checkpoint
    batch = to_device(update.batch, device)
    with cpu_randomness() if cpu_draws else contextlib.nullcontext():
        torch.manual_seed(update.seed)
        info = (forward or (lambda policy, batch: policy.learn_mode.forward(batch)))(policy, batch)
    return policy, info, policy.learn_mode.state_dict()


def clone(tree: Any) -> Any:
    return tree_map(lambda leaf: leaf.detach().clone() if isinstance(leaf, torch.Tensor) else copy.deepcopy(leaf),
                    tree, sequences=True)


def to_device(tree: Any, device: str) -> Any:
    return tree_map(lambda leaf: leaf.to(device) if isinstance(leaf, torch.Tensor) else copy.deepcopy(leaf),
                    tree, sequences=True)


def plain(state: dict[str, Any]) -> dict[str, Any]:
    """A learn state with its 0-d tensors as floats (a compiled update's optimizers hold their rates as tensors)
    and without the optimizers' `capturable` flags, which compiling an optimizer step on a GPU turns on."""
    numbers = tree_map(lambda leaf: float(leaf) if isinstance(leaf, torch.Tensor) and leaf.dim() == 0 else leaf,
                       state, sequences=True)
    return _without_capturable(numbers)


def _without_capturable(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {key: _without_capturable(value) for key, value in tree.items()
                if not (key == 'capturable' and 'params' in tree)}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_without_capturable(value) for value in tree)
    return tree


def scalars_of(info: dict[str, Any]) -> dict[str, torch.Tensor]:
    return {key: torch.as_tensor(value).detach().cpu().double() for key, value in info.items()
            if torch.as_tensor(value).dim() == 0}


@functools.cache
def _originals() -> dict[str, Any]:
    return dict(randn=torch.randn, rand=torch.rand, randint=torch.randint, randperm=torch.randperm,
                multinomial=torch.multinomial, rand_like=torch.rand_like, exponential_=torch.Tensor.exponential_)


@pytest.fixture
def cpu_randomness_fixture():
    with cpu_randomness():
        yield


class cpu_randomness:
    """Every random draw of torch's functions made on the CPU's generator and moved to the device asked for, so
    that an update on a GPU draws the very numbers it draws on the CPU."""

    def __enter__(self) -> None:
        original = _originals()

        def drawn(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
            def draw(*args: Any, device: Any = None, generator: Any = None, **kwargs: Any) -> torch.Tensor:
                if generator is not None and generator.device.type != 'cpu':
                    generator = None
                return fn(*args, generator=generator, **kwargs).to(device or 'cpu')
            return draw

        def multinomial(prob: torch.Tensor, *args: Any, generator: Any = None, **kwargs: Any) -> torch.Tensor:
            if generator is not None and generator.device.type != 'cpu':
                generator = None
            return original['multinomial'](prob.cpu(), *args, generator=generator, **kwargs).to(prob.device)

        def rand_like(tensor: torch.Tensor, **kwargs: Any) -> torch.Tensor:
            return original['rand'](tensor.shape, dtype=kwargs.get('dtype', tensor.dtype)).to(tensor.device)

        def exponential_(tensor: torch.Tensor, *args: Any, generator: Any = None, **kwargs: Any) -> torch.Tensor:
            drawn_values = original['exponential_'](torch.empty(tensor.shape, dtype=tensor.dtype), *args, **kwargs)
            return tensor.copy_(drawn_values)

        self._patches = dict(randn=drawn(original['randn']), rand=drawn(original['rand']),
                             randint=drawn(original['randint']), randperm=drawn(original['randperm']),
                             multinomial=multinomial, rand_like=rand_like)
        for name, fn in self._patches.items():
            setattr(torch, name, fn)
        torch.Tensor.exponential_ = exponential_  # type: ignore[method-assign]

    def __exit__(self, *exc: Any) -> None:
        for name, fn in _originals().items():
            if name == 'exponential_':
                torch.Tensor.exponential_ = fn  # type: ignore[method-assign]
            else:
                setattr(torch, name, fn)


class HostReads:
    """Counts the tensor-to-host conversions made inside the block (each a device sync on a GPU)."""

    NAMES = ('item', 'tolist', 'numpy', 'cpu', '__bool__', '__float__', '__int__', '__index__')

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __enter__(self) -> 'HostReads':
        self._originals = {name: getattr(torch.Tensor, name) for name in self.NAMES}
        for name, original in self._originals.items():
            setattr(torch.Tensor, name, self._counting(name, original))
        return self

    def _counting(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def counted(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            frame = traceback.extract_stack(limit=2)[0]
            # an optimizer without fused kernels reads its step counts, which stay on the host beside GPU weights
            if Path(frame.filename).parent.name != 'optim':
                self.calls.append(f'{name} at {Path(frame.filename).name}:{frame.lineno}')
            return original(tensor, *args, **kwargs)
        return counted

    def __exit__(self, *exc: Any) -> None:
        for name, original in self._originals.items():
            setattr(torch.Tensor, name, original)


# ----- on the CPU ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize('name', sorted(SHORT_RUNS))
def test_the_first_update_replays_exactly_from_its_state_and_batch(name, demos, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    update = capture_first_update(name, demos, monkeypatch)
    _, info, after = replay(update, 'cpu')
    assert_close(scalars_of(info), scalars_of(update.info), rtol=0, atol=0)
    assert_close(after, update.after, rtol=0, atol=0)


@pytest.mark.parametrize('name', sorted(SHORT_RUNS))
def test_an_update_reads_no_tensor_back_to_the_host(name, demos, tmp_path, monkeypatch):
    """The learn step of every policy leaves its values as tensors: on a GPU each read would wait for the device."""
    monkeypatch.chdir(tmp_path)
    update = capture_first_update(name, demos, monkeypatch)
    reads = HostReads()

    def counted_second_update(policy: Any, batch: dict[str, Any]) -> dict[str, Any]:
        policy.learn_mode.forward(clone(batch))  # the first update may set things up
        with reads:
            return policy.learn_mode.forward(batch)

    replay(update, 'cpu', counted_second_update)
    assert not reads.calls, '; '.join(reads.calls)


@pytest.mark.parametrize('name', ['sac', 'ppo', 'muzero'])
def test_a_compiled_update_equals_the_eager_one(name, demos, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    update = capture_first_update(name, demos, monkeypatch)

    def three_updates(policy: Any, batch: dict[str, Any]) -> dict[str, Any]:
        return [policy.learn_mode.forward(clone(batch)) for _ in range(3)][-1]

    _, eager_info, eager_after = replay(update, 'cpu', three_updates)
    graphs = compiled_graphs()
    policy, info, after = replay(update, 'cpu', three_updates, learn__compile='default')
    assert policy._compiled is not None and compiled_graphs() > graphs
    assert_close(scalars_of(info), scalars_of(eager_info), rtol=1e-4, atol=1e-5)
    assert_close(plain(after), plain(eager_after), rtol=1e-4, atol=1e-5)


def compiled_graphs() -> int:
    """The graphs torch.compile has made in this process so far."""
    from torch._dynamo.utils import counters
    return int(counters['stats']['unique_graphs'])


def test_a_decaying_learning_rate_and_clip_ratio_compile_once(demos, tmp_path, monkeypatch):
    """PPO's schedules reach the compiled step as tensors: each new value is not a new graph."""
    monkeypatch.chdir(tmp_path)
    update = capture_first_update('ppo', demos, monkeypatch, 'policy.learn.decay_env_steps=10000')
    assert update.cfg.learn.lr_decay and update.cfg.learn.clip_decay and update.cfg.learn.learning_rate == 1e-3
    counts = []

    def updates_later_and_later(policy: Any, batch: dict[str, Any]) -> dict[str, Any]:
        for env_step in (100, 2000, 4000, 6000):
            info = policy.learn_mode.forward({**clone(batch), 'env_step': env_step})
            counts.append(compiled_graphs())
        return info

    policy, info, _ = replay(update, 'cpu', updates_later_and_later, learn__compile='default')
    assert counts[1] == counts[-1]
    assert float(info['learning_rate']) == pytest.approx(1e-3 * 0.4)
    assert float(info['clip_ratio']) == pytest.approx(0.2 * 0.4)
    assert isinstance(policy._optimizer.param_groups[0]['lr'], torch.Tensor)
    assert float(policy._optimizer.param_groups[0]['lr']) == pytest.approx(float(info['learning_rate']))


# ----- on a GPU ---------------------------------------------------------------------------------------------------
@pytest.fixture
def full_float32() -> Iterator[None]:
    set_tf32(False)
    yield


@pytest.mark.gpu
@pytest.mark.parametrize('name', sorted(SHORT_RUNS))
def test_the_first_update_on_the_gpu_equals_the_cpus(name, demos, tmp_path, monkeypatch, full_float32):
    monkeypatch.chdir(tmp_path)
    update = capture_first_update(name, demos, monkeypatch)
    _, info, after = replay(update, 'cuda')
    assert_close(scalars_of(info), scalars_of(update.info), rtol=1e-4, atol=1e-5)
    assert_close(to_device(after, 'cpu'), update.after, rtol=1e-4, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize('name', sorted(SHORT_RUNS))
def test_an_update_on_the_gpu_never_waits_for_it(name, demos, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    update = capture_first_update(name, demos, monkeypatch)

    def synced_second_update(policy: Any, batch: dict[str, Any]) -> dict[str, Any]:
        policy.learn_mode.forward(clone(batch))
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode('error')
        try:
            return policy.learn_mode.forward(batch)
        finally:
            torch.cuda.set_sync_debug_mode('default')

    replay(update, 'cuda', synced_second_update, cpu_draws=False)  # a CPU draw moved to the GPU is itself a wait


@pytest.mark.gpu
@pytest.mark.parametrize('name, mode', [('sac', 'reduce-overhead'), ('ppo', 'reduce-overhead'), ('sac', 'default')])
def test_a_compiled_update_on_the_gpu_equals_the_eager_one(name, mode, demos, tmp_path, monkeypatch, full_float32):
    monkeypatch.chdir(tmp_path)
    update = capture_first_update(name, demos, monkeypatch)

    def five_updates(policy: Any, batch: dict[str, Any]) -> dict[str, Any]:
        return clone([policy.learn_mode.forward(clone(batch)) for _ in range(5)][-1])

    _, eager_info, eager_after = replay(update, 'cuda', five_updates)
    _, info, after = replay(update, 'cuda', five_updates, learn__compile=mode)
    assert_close(scalars_of(info), scalars_of(eager_info), rtol=1e-4, atol=1e-5)
    assert_close(plain(after), plain(eager_after), rtol=1e-4, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize('name', sorted(SHORT_RUNS))
def test_every_policy_trains_on_the_gpu_and_its_checkpoint_moves_to_the_cpu_and_back(name, demos, tmp_path,
                                                                                     monkeypatch):
    monkeypatch.chdir(tmp_path)
    update = capture_first_update(name, demos, monkeypatch)  # a batch of this policy's, on the CPU
    config, steps, _ = SHORT_RUNS[name]
    gpu = train(config, seed=0, **budget(name, steps), progress=False,
                overrides=short_run_overrides(name, demos, 'policy.device=cuda', 'exp_name=gpu'))
    assert next(gpu.policy.model.parameters()).is_cuda and gpu.evals and gpu.evals[-1]['train_iter'] > 0
    latest = gpu.run_dir / 'ckpt' / 'latest.pt'
    state = policy_state(load_checkpoint(latest), latest)  # mapped to the CPU
    for device in ('cpu', 'cuda'):  # an update on the CPU from the GPU's state, then on the GPU from the CPU's
        cfg = copy.deepcopy(update.cfg)
        cfg.device = device
        policy = policy_class(cfg.type, cfg)(cfg)
        policy.learn_mode.load_state_dict(state)
        info = policy.learn_mode.forward(to_device(update.batch, device))
        assert all(torch.isfinite(value).all() for value in scalars_of(info).values())
        state = to_device(policy.learn_mode.state_dict(), 'cpu')
    config_file = gpu.run_dir / 'config.yaml'
    on_cpu = tmp_path / 'on_cpu.yaml'
    on_cpu.write_text(config_file.read_text().replace('device: cuda', 'device: cpu'))
    cpu_eval = evaluate_checkpoint(str(on_cpu), latest, episodes=1)
    gpu_eval = evaluate_checkpoint(str(config_file), latest, episodes=1)
    assert cpu_eval.returns == pytest.approx(gpu_eval.returns, rel=1e-3, abs=1e-3)
