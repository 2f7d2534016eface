"""LightZero 0.2.0's own CartPole MuZero (zoo/classic_control/cartpole/config/cartpole_muzero_config.py), on CPU.

Runs inside `benchmarks/.venv-lightzero` (set up by `common.ensure_lightzero_venv(training=True)`) and writes
the same run folder as `tidal train` (`evals.csv`, `summary.json`), read by `common.read_run`. The shipped
config is taken as is (8 collector envs, 25 simulations, 100 updates of batch 256 per collect, ...) except
for what the comparison needs: CartPole-v1, a stop value it never reaches (the run spends its whole budget),
CPU, the in-process env manager, DI-engine's logs in `<run dir>/lightzero`, and the evaluations below.

Evaluation is LightZero's own evaluator (its policy's eval mode: the most visited action of the search) over
`--eval-episodes` episodes, one per evaluator env (the shipped 3 envs for 3 episodes become 5 for 5: with more
episodes than envs LightZero 0.2.0's evaluator hands the extra episodes to whichever env finishes first while
its monitor expects a fixed share per env, and fails), at env step 0, then at the top of the first training
loop iteration at least `--eval-freq` env steps after the previous evaluation (LightZero collects whole
episodes, 8 per collect, so late in a run that is once per collect), and once more at the end. Its time
counts in the wall time, which starts with the first evaluation, as tidal's starts with its training loop.

    OMP_NUM_THREADS=1 benchmarks/.venv-lightzero/bin/python benchmarks/lightzero_cartpole_muzero.py \\
        --run-dir /tmp/lz --max-env-step 600 --eval-freq 300
"""
import argparse
import copy
import importlib.metadata
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

from common import EvalLog, write_summary

NEVER_STOP = 10 ** 9  # the evaluator's stop value: CartPole-v1 returns at most 500


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--max-env-step', type=int, default=20_000,
                        help='env steps to collect (LightZero stops after the collect-and-train that reaches it)')
    parser.add_argument('--run-dir', type=Path, required=True)
    parser.add_argument('--eval-freq', type=int, default=1024, help='env steps between evaluations')
    parser.add_argument('--max-wall-seconds', type=float, default=None,
                        help='stop at the first evaluation after this much wall clock, whatever the env steps')
    parser.add_argument('--eval-episodes', type=int, default=5)
    parser.add_argument('--threads', type=int, default=1, help='torch intra-op threads')
    parser.add_argument('--collector-env-num', type=int, default=None, help='default: the shipped config (8)')
    parser.add_argument('--update-per-collect', type=int, default=None, help='default: the shipped config (100)')
    parser.add_argument('--batch-size', type=int, default=None, help='default: the shipped config (256)')
    parser.add_argument('--num-simulations', type=int, default=None, help='default: the shipped config (25)')
    return parser.parse_args()


class WallClockSpent(Exception):
    """Raised from an evaluation once the run's wall-clock budget is spent, to leave LightZero's loop."""


def patch_entry(entry, log: EvalLog, eval_freq: int, max_wall_seconds: float | None = None) -> dict:
    """Swaps the classes `train_muzero` builds for subclasses that remember their instances and log the
    evaluations; returns where the instances end up ({'collector', 'learner', 'evaluator', 'start'})."""
    evaluator_module = sys.modules[entry.Evaluator.__module__]
    seen: dict = {}

    class Collector(entry.Collector):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            seen['collector'] = self

    class Learner(entry.BaseLearner):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            seen['learner'] = self

    class LengthMonitor(evaluator_module.VectorEvalMonitor):
        """LightZero's monitor of the evaluation episodes, also keeping their lengths."""

        def __init__(self, env_num: int, n_episode: int) -> None:
            super().__init__(env_num, n_episode)
            self.lengths: list[int] = []
            self.finished_length: dict[int, int] = {}  # set by the env step wrapper just before update_reward
            seen['monitor'] = self

        def update_reward(self, env_id: int, reward) -> None:
            super().update_reward(env_id, reward)
            self.lengths.append(self.finished_length[env_id])

    class Evaluator(entry.Evaluator):
        """LightZero's evaluator, due every `eval_freq` env steps, writing one `evals.csv` row per evaluation."""

        last_env_step: int | None = None

        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            seen['evaluator'] = self

        def should_eval(self, train_iter: int) -> bool:
            return seen['collector'].envstep - self.last_env_step >= eval_freq

        def eval(self, save_ckpt_fn=None, train_iter: int = -1, envstep: int = -1, *a, **k):
            seen.setdefault('start', time.perf_counter())
            running: dict[int, int] = defaultdict(int)
            env_step = self._env.step

            def counting_step(actions):
                timesteps = env_step(actions)
                for env_id, timestep in timesteps.items():
                    running[env_id] += 1
                    if timestep.done:
                        seen['monitor'].finished_length[env_id] = running.pop(env_id)
                return timesteps

            self._env.step = counting_step
            try:
                result = super().eval(save_ckpt_fn, train_iter, envstep, *a, **k)
            finally:
                del self._env.step  # back to the class's method
            monitor = seen['monitor']
            returns = np.asarray(monitor.get_episode_return(), dtype=np.float64)
            if len(monitor.lengths) != len(returns):
                raise RuntimeError(f'{len(returns)} evaluation returns but {len(monitor.lengths)} episodes')
            lengths = np.asarray(monitor.lengths)
            log.write(envstep, train_iter, time.perf_counter() - seen['start'], float(returns.mean()),
                      float(returns.std()), float(lengths.mean()))
            self.last_env_step = envstep
            if max_wall_seconds is not None and time.perf_counter() - seen['start'] > max_wall_seconds:
                raise WallClockSpent
            return result

    entry.Collector, entry.BaseLearner, entry.Evaluator = Collector, Learner, Evaluator
    evaluator_module.VectorEvalMonitor = LengthMonitor
    return seen


def main() -> None:
    args = parse_args()
    run_dir = args.run_dir.resolve()
    torch.set_num_threads(args.threads)

    from lzero.entry import train_muzero
    entry = sys.modules['lzero.entry.train_muzero']  # the module; `lzero.entry.train_muzero` names the function
    from zoo.classic_control.cartpole.config.cartpole_muzero_config import create_config, main_config

    cfg, create = copy.deepcopy(main_config), copy.deepcopy(create_config)
    cfg.exp_name = 'lightzero'  # DI-engine writes its logs and checkpoints to ./<exp_name>, so under the run dir
    cfg.env.env_id, cfg.env.stop_value = 'CartPole-v1', NEVER_STOP
    cfg.env.n_evaluator_episode = cfg.env.evaluator_env_num = cfg.policy.evaluator_env_num = args.eval_episodes
    cfg.policy.cuda = False
    create.env_manager.type = 'base'
    if args.collector_env_num is not None:
        cfg.env.collector_env_num = cfg.policy.collector_env_num = args.collector_env_num
        cfg.policy.n_episode = args.collector_env_num
    for name in ('update_per_collect', 'batch_size', 'num_simulations'):
        if getattr(args, name) is not None:
            cfg.policy[name] = getattr(args, name)

    log = EvalLog(run_dir)
    seen = patch_entry(entry, log, args.eval_freq, args.max_wall_seconds)
    os.chdir(run_dir)
    stopped_by = 'env steps'
    try:
        train_muzero([cfg, create], seed=args.seed, max_env_step=args.max_env_step)
    except WallClockSpent:
        stopped_by = f'wall clock ({args.max_wall_seconds:.0f} s)'
    collector, learner, evaluator = seen['collector'], seen['learner'], seen['evaluator']
    if evaluator.last_env_step != collector.envstep:  # the loop ends after training, without evaluating
        evaluator.eval(None, learner.train_iter, collector.envstep)
    wall_time = time.perf_counter() - seen['start']
    log.close()
    evaluator.close()
    collector.close()

    summary = write_summary(run_dir, collector.envstep, learner.train_iter, wall_time)
    policy = cfg.policy
    info = {'library': 'LightZero', 'algorithm': 'MuZero', 'config': 'zoo.classic_control.cartpole.config.'
            'cartpole_muzero_config', 'env_id': cfg.env.env_id, 'seed': args.seed, 'threads': args.threads,
            'max_env_step': args.max_env_step, 'stopped_by': stopped_by, 'eval_freq': args.eval_freq, 'eval_episodes': args.eval_episodes,
            'settings': {'collector_env_num': cfg.env.collector_env_num, 'evaluator_env_num': cfg.env.evaluator_env_num,
                         'n_episode': policy.n_episode, 'num_simulations': policy.num_simulations,
                         'update_per_collect': policy.update_per_collect, 'batch_size': policy.batch_size,
                         'env_manager': create.env_manager.type, 'cuda': policy.cuda},
            'versions': {name: importlib.metadata.version(name)
                         for name in ('LightZero', 'DI-engine', 'torch', 'numpy', 'gym')}}
    (run_dir / 'run_info.json').write_text(json.dumps(info, indent=2) + '\n')
    print(json.dumps(summary), flush=True)


if __name__ == '__main__':
    main()
